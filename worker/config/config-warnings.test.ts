import { describe, expect, it } from 'vitest';
import { parseWorkerConfig } from './worker-config.ts';
import { workerConfigWarnings } from './config-warnings.ts';

const config = (extra: Record<string, unknown>) => parseWorkerConfig({ agents: [], servers: {}, ...extra }, { runtime: 'edge' });

describe('worker config warnings', () => {
  it('warns of a plain-http public-url off this machine, and of nothing else', () => {
    for (const url of ['http://yard.lan:8787', 'http://192.168.1.20', 'http://switchyard.example.com']) {
      expect([url, workerConfigWarnings(config({ 'public-url': url })).map((w) => `${w.path}: ${w.message.split(':')[0]}`)]).toEqual([url, ['public-url: is plain http off this machine']]);
    }
    for (const url of ['https://yard.example.com', 'http://127.0.0.1:8787', 'http://localhost:8787', 'http://[::1]:8787', undefined]) {
      expect([url, workerConfigWarnings(config(url === undefined ? {} : { 'public-url': url }))]).toEqual([url, []]);
    }
  });
});

describe('the worker and its config warnings', () => {
  it('logs them when it starts and when a changed config comes in force', async () => {
    const { composeWorker } = await import('../compose.ts');
    const { createWorkerLogger } = await import('../log.ts');
    const lines: Array<Record<string, unknown>> = [];
    const log = createWorkerLogger({ level: 'warn', write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const warned = () => lines.filter((l) => l.msg === 'Worker config warning').map((l) => [l.path, String(l.warning).split(':')[0]]);
    const worker = composeWorker({ config: config({ 'public-url': 'http://yard.lan:8787' }), log });
    expect(warned()).toEqual([['public-url', 'is plain http off this machine']]);
    await worker.reload(config({ 'public-url': 'https://yard.example.com' }));
    expect(warned()).toHaveLength(1);
    await worker.reload(config({ 'public-url': 'http://192.168.1.20' }));
    expect(warned()).toHaveLength(2);
    await worker.close();
  });
});
