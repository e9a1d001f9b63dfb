import { afterEach, describe, expect, it } from 'vitest';
import { runWorkerCommand } from './worker-command.ts';

const saved = process.env.PORT;
afterEach(() => {
  if (saved === undefined) delete process.env.PORT;
  else process.env.PORT = saved;
});

describe('switchyard worker --port', () => {
  it('refuses a port that is not digits, naming the value it read and where from, before starting anything (review s19)', async () => {
    for (const port of ['', '0x50', '1e3', '+80', '65536', 'abc']) {
      await expect(runWorkerCommand(['--config', '/nonexistent/worker.json', '--port', port])).rejects.toThrow(`Invalid port "${port}": expected 0-65535`);
    }
    process.env.PORT = 'abc';
    await expect(runWorkerCommand(['--config', '/nonexistent/worker.json'])).rejects.toThrow('Invalid port "abc" (from PORT): expected 0-65535');
  });
});

describe('switchyard worker --host', () => {
  it('says so when HOST from the environment puts the worker on the network, as a shell may export it unasked (review of s21)', async () => {
    const savedHost = process.env.HOST;
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      process.env.HOST = 'workstation.example.test';
      // The config is missing: the command stops there, after reading where it would listen.
      await expect(runWorkerCommand(['--config', '/nonexistent/worker.json'])).rejects.toThrow('Cannot read the worker config');
      process.env.HOST = '127.0.0.1';
      await expect(runWorkerCommand(['--config', '/nonexistent/worker.json'])).rejects.toThrow('Cannot read the worker config');
    } finally {
      process.stderr.write = write;
      if (savedHost === undefined) delete process.env.HOST;
      else process.env.HOST = savedHost;
    }
    expect(written).toEqual(['note: the worker listens on "workstation.example.test" (from HOST), which this machine\'s network reaches; --host 127.0.0.1 keeps it on this machine\n']);
  });
});

describe('switchyard worker --runtime', () => {
  it('takes edge, check\'s name for Deno\'s runtime, as deno, and refuses another name before reading the config', async () => {
    await expect(runWorkerCommand(['--runtime', 'edge', '--config', '/nonexistent/worker.json'])).rejects.toThrow('Cannot read the worker config');
    await expect(runWorkerCommand(['--runtime', 'workers', '--config', '/nonexistent/worker.json'])).rejects.toThrow('Unknown runtime "workers": expected deno (also called edge) or node');
  });
});
