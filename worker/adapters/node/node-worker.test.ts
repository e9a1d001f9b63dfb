import { describe, expect, it } from 'vitest';
import { agentEntry } from '../../../test/support/configs.ts';
import { parseWorkerConfig } from '../../config/worker-config.ts';
import { startNodeWorker } from './node-worker.ts';

describe('startNodeWorker', () => {
  it('listens on loopback when given an empty host, as when none is given: Node would bind every address (review s21)', async () => {
    const config = parseWorkerConfig({
      agents: [agentEntry({ name: 'alice', token: 'alice-token', servers: ['docs'] })],
      servers: { docs: { executor: { type: 'http', url: 'http://127.0.0.1:9/mcp' } } },
    }, { runtime: 'edge' });
    const worker = await startNodeWorker({ config, host: '' });
    try {
      expect(worker.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await worker.close();
    }
  });
});
