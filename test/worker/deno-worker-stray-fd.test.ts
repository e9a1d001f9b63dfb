/**
 * The worker under Deno holds none of the descriptors the CLI inherited (DESIGN §5: no stray
 * descriptors). `switchyard worker` runs here with stray pipes at fds 40 and 100, as a shell's
 * left-open pipe would reach it; once it listens, Deno holds `/dev/null` at those numbers while
 * the CLI itself still holds both pipes, inheritable. Spawned with plain `child_process`, Deno
 * held both pipes for as long as it ran.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeWorkerConfig } from '../support/configs.ts';
import { childNamed, descriptorsOf, inheritable, STRAYS, strayStdio } from '../support/descriptors.ts';
import { REPO } from '../support/paths.ts';
import { isAlive, ProcessSet, waitUntil } from '../support/processes.ts';

const procs = new ProcessSet();
const dir = mkdtempSync(join(tmpdir(), 'sy-deno-stray-fd-'));
afterAll(async () => {
  await procs.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('switchyard worker with descriptors its parent left open', () => {
  it('starts Deno with /dev/null where they are, and keeps them itself', async () => {
    const configFile = writeWorkerConfig(dir, { agents: [], hosts: [], servers: {} });
    const child = spawn(process.execPath, [join(REPO, 'bin', 'switchyard.mjs'), 'worker', '--config', configFile, '--port', '0'], {
      cwd: REPO,
      stdio: strayStdio(),
      env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1', SWITCHYARD_LOG_LEVEL: 'warn' },
    });
    const cli = procs.adopt(child);
    await waitUntil(() => cli.stdout().includes('"event":"listening"') || child.exitCode !== null, 'the worker to listen');
    expect(cli.stdout(), cli.stderr()).toContain('"event":"listening"');
    const deno = childNamed(child.pid!, 'deno');
    expect(deno, 'the CLI runs Deno as its child').toBeDefined();

    // The strays are really there in the CLI, and would reach a child it spawned plainly.
    const cliFds = descriptorsOf(child.pid!);
    for (const fd of STRAYS) {
      expect(cliFds[fd], `the CLI's fd ${fd}`).toMatch(/^(pipe|socket):\[\d+\]$/);
      expect(inheritable(child.pid!, fd), `the CLI's fd ${fd} has no close-on-exec`).toBe(true);
    }
    const strayTargets = STRAYS.map((fd) => cliFds[fd]!);
    const denoFds = descriptorsOf(deno!);
    expect(Object.entries(denoFds).filter(([, target]) => strayTargets.includes(target))).toEqual([]);
    for (const fd of STRAYS) expect(denoFds[fd], `Deno's fd ${fd}`).toBe('/dev/null');

    await cli.stop();
    expect(isAlive(deno!)).toBe(false);
  });
});
