/**
 * Deno never outlives the `switchyard worker` that started it. A SIGKILLed CLI runs no handler,
 * so Deno learns of it from its stdin, a pipe only the CLI held: it stops as on SIGTERM (closing
 * every session) and frees the port. A signal while Deno starts is the CLI's to handle: it stops
 * Deno and waits for it. Before, both left Deno running, holding the port and its sessions, and
 * a SIGTERM that reached the CLI between Deno's `listening` line and its handlers did the same.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeWorkerConfig } from '../support/configs.ts';
import { childNamed } from '../support/descriptors.ts';
import { REPO } from '../support/paths.ts';
import { isAlive, ProcessSet, waitFor, waitUntil, type RunningProcess } from '../support/processes.ts';

const procs = new ProcessSet();
const dir = mkdtempSync(join(tmpdir(), 'sy-deno-lifeline-'));
const denos: number[] = [];
procs.afterStop(() => {
  for (const pid of denos.filter(isAlive)) process.kill(pid, 'SIGKILL');
});
afterAll(async () => {
  await procs.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

function startCli(): RunningProcess {
  const configFile = writeWorkerConfig(dir, { agents: [], hosts: [], servers: {} });
  const child = spawn(process.execPath, [join(REPO, 'bin', 'switchyard.mjs'), 'worker', '--config', configFile, '--port', '0'], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1', SWITCHYARD_LOG_LEVEL: 'info' },
  });
  return procs.adopt(child);
}

async function denoOf(cli: RunningProcess): Promise<number> {
  const pid = await waitFor(() => childNamed(cli.child.pid!, 'deno'), 'the CLI to start Deno');
  denos.push(pid);
  return pid;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

describe('switchyard worker and the Deno it runs', () => {
  it('a SIGKILLed CLI: Deno sees its stdin end, stops as on SIGTERM and frees the port', async () => {
    const cli = startCli();
    const deno = await denoOf(cli);
    await waitUntil(() => cli.stdout().includes('"event":"listening"') || cli.child.exitCode !== null, 'the worker to listen');
    const port = Number(/"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(cli.stdout())?.[1]);
    expect(port, cli.stderr()).toBeGreaterThan(0);

    cli.child.kill('SIGKILL');
    expect(await cli.exited).toBe('SIGKILL');
    await waitUntil(() => !isAlive(deno), 'Deno to stop', 10_000);
    // Deno's stderr was the CLI's: the test still reads what Deno wrote after the CLI was gone.
    await waitUntil(() => cli.stderr().includes('"cause":"stdin-end"'), 'Deno to say why it stopped', 5_000);
    expect(await portIsFree(port)).toBe(true);
  });

  it('a Deno killed under it: the CLI says so in its log and exits with its code, where it ended without a word (QA s30)', async () => {
    const cli = startCli();
    const deno = await denoOf(cli);
    await waitUntil(() => cli.stdout().includes('"event":"listening"') || cli.child.exitCode !== null, 'the worker to listen');
    process.kill(deno, 'SIGKILL');
    expect(await cli.exited).toBe(137);
    const said = cli.stderr().split('\n').filter((l) => l.includes('The worker stopped on its own'));
    expect(said.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([expect.objectContaining({ level: 'error', exitCode: 137, signal: 'SIGKILL' })]);
  });

  it('a SIGTERM while Deno starts: the CLI stops Deno and exits only once Deno is gone', async () => {
    const cli = startCli();
    const deno = await denoOf(cli);
    // Held before it can listen, so the signal surely comes while it starts.
    process.kill(deno, 'SIGSTOP');
    cli.child.kill('SIGTERM');
    process.kill(deno, 'SIGCONT');
    expect(await cli.exited, cli.stderr()).toBe(0);
    expect(isAlive(deno)).toBe(false);
    expect(cli.stdout()).not.toContain('"event":"listening"');
  });
});
