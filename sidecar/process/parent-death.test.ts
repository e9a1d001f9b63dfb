import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oldSetpriv } from '../../test/support/old-setpriv.ts';
import { isAlive, runsFile, waitUntil } from '../../test/support/processes.ts';
import { findPrlimit } from './address-space-limit.ts';
import { diesWithParentCommand, findSetpriv, takesParentDeathSignal } from './parent-death.ts';

/** A process that outlives its stdin (it holds a timer), as some servers do. */
const OUTLIVES_STDIN = 'process.stdin.resume(); setInterval(() => {}, 60_000)';

/**
 * Starts a parent process that spawns `file args` the way the sidecar does (from its main thread)
 * and prints the child's pid; returns both pids.
 */
async function parentWithChild(file: string, args: readonly string[]): Promise<{ parent: number; child: number }> {
  const script = `const c = require('node:child_process').spawn(${JSON.stringify(file)}, ${JSON.stringify(args)}, { stdio: ['pipe', 'ignore', 'ignore'], detached: true }); console.log(c.pid); setInterval(() => {}, 60_000);`;
  const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const child = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))));
  return { parent: parent.pid!, child };
}

describe('dying with the sidecar', () => {
  it('runs the launch under setpriv, the command and its arguments unchanged after "--"', () => {
    expect(diesWithParentCommand('/usr/bin/setpriv', '/usr/bin/prlimit', ['--data=1024', '--', 'node', 'x'])).toEqual({
      file: '/usr/bin/setpriv',
      args: ['--pdeathsig', 'KILL', '--', '/usr/bin/prlimit', '--data=1024', '--', 'node', 'x'],
    });
    expect(findSetpriv({ PATH: '/usr/bin' }, 'darwin')).toBeNull();
  });

  it('ends a process that outlives its stdin when its parent is SIGKILLed, through prlimit too; without it the process stays', async () => {
    const setpriv = findSetpriv(process.env);
    expect(setpriv, 'setpriv (util-linux) is installed').not.toBeNull();
    const prlimit = findPrlimit(process.env);
    expect(prlimit, 'prlimit (util-linux) is installed').not.toBeNull();
    const command = diesWithParentCommand(setpriv!, prlimit!, ['--data=4294967296', '--', process.execPath, '-e', OUTLIVES_STDIN]);
    const guarded = await parentWithChild(command.file, command.args);
    const unguarded = await parentWithChild(process.execPath, ['-e', OUTLIVES_STDIN]);
    try {
      // Killed only once the child is node itself: setpriv set the signal and both tools exec'd
      // (a child that died on its own before the kill would pass the wait below for nothing).
      await waitUntil(() => runsFile(guarded.child, process.execPath), 'the guarded child to run node, past setpriv and prlimit', 10_000);
      await waitUntil(() => runsFile(unguarded.child, process.execPath), 'the other child to run node', 10_000);
      process.kill(guarded.parent, 'SIGKILL');
      process.kill(unguarded.parent, 'SIGKILL');
      await waitUntil(() => !isAlive(guarded.child), 'the guarded child to end with its parent', 10_000);
      await waitUntil(() => !isAlive(unguarded.parent), 'the other parent to end', 10_000);
      expect(isAlive(unguarded.child)).toBe(true);
    } finally {
      for (const pid of [guarded.parent, unguarded.parent, guarded.child, unguarded.child]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('finds that this host\'s setpriv takes --pdeathsig, and that an older one does not, saying what it said', async () => {
    const setpriv = findSetpriv(process.env);
    expect(setpriv, 'setpriv (util-linux) is installed').not.toBeNull();
    expect(await takesParentDeathSignal(setpriv!)).toEqual({ ok: true });
    const dir = mkdtempSync(join(tmpdir(), 'old-setpriv-'));
    try {
      const probe = await takesParentDeathSignal(oldSetpriv(dir));
      expect(probe).toEqual({ ok: false, problem: expect.stringContaining("exited with code 1: setpriv: unrecognized option '--pdeathsig'") });
      expect(await takesParentDeathSignal(join(dir, 'missing'))).toEqual({ ok: false, problem: expect.stringContaining('could not be started: ENOENT') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

