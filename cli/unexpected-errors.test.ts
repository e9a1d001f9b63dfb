import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..');

describe('keepServingOnUnexpectedErrors', () => {
  it('logs an uncaught exception and an unhandled rejection, and the process goes on to finish its work', () => {
    const script = `
      const { keepServingOnUnexpectedErrors } = await import(${JSON.stringify(join(REPO, 'cli/unexpected-errors.ts'))});
      const { createLogger } = await import(${JSON.stringify(join(REPO, 'sidecar/log.ts'))});
      keepServingOnUnexpectedErrors(createLogger({ level: 'info' }));
      setTimeout(() => { throw new RangeError('Maximum call stack size exceeded'); }, 0);
      setTimeout(() => void Promise.reject(new Error('nobody awaited this')), 5);
      setTimeout(() => process.stdout.write('still serving\\n'), 50);
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('still serving\n');
    const lines = run.stderr.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ level: 'error', msg: 'Uncaught exception: logged, and this process keeps serving every other session', error: 'RangeError' }),
      expect.objectContaining({ level: 'error', msg: 'Unhandled promise rejection: logged, and this process keeps serving every other session', message: 'nobody awaited this' }),
    ]);
  });
});
