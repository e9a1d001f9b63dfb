/**
 * One `switchyard worker` per OAuth state dir: a second one would make its own sealing key beside
 * the first one's, the last write winning, and every client the other sealed would be unknown
 * after a restart. It is refused, naming the first; once the first is gone (even SIGKILLed, which
 * runs no exit handler) its lock is taken over.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeWorkerConfig } from '../support/configs.ts';
import { REPO } from '../support/paths.ts';
import { ProcessSet, waitUntil, type RunningProcess } from '../support/processes.ts';

const procs = new ProcessSet();
const dir = mkdtempSync(join(tmpdir(), 'sy-worker-lock-'));
afterAll(async () => {
  await procs.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

const configFile = writeWorkerConfig(dir, { agents: [], hosts: [], servers: {}, oauth: { 'built-in': {} } });
const args = [join(REPO, 'bin', 'switchyard.mjs'), 'worker', '--config', configFile, '--port', '0'];
const env = { ...process.env, SWITCHYARD_FROM_SOURCE: '1' };

async function startWorker(): Promise<{ cli: RunningProcess; url: string }> {
  const cli = procs.adopt(spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env }));
  await waitUntil(() => cli.stdout().includes('"event":"listening"') || cli.child.exitCode !== null, 'the worker to listen');
  const url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(cli.stdout())?.[1];
  expect(url, cli.stderr()).toBeDefined();
  return { cli, url: url! };
}

describe('switchyard worker with the built-in OAuth server', () => {
  it('refuses a second worker on its state dir, naming the first, and a later one takes over the lock of one that was killed', async () => {
    const first = await startWorker();
    const second = spawnSync(process.execPath, args, { cwd: REPO, encoding: 'utf8', timeout: 30_000, env });
    expect([second.status, second.stderr.trim()]).toEqual([
      1,
      `switchyard: State dir ${dir} is in use by switchyard worker on ${first.url} (pid ${first.cli.child.pid}): stop it, or pass --state-dir with another folder`,
    ]);

    first.cli.child.kill('SIGKILL');
    await first.cli.exited;
    const third = await startWorker();
    expect(third.cli.child.exitCode).toBeNull();
  });
});
