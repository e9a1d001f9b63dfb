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
