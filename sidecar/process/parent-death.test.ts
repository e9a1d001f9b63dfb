import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isAlive, waitUntil } from '../../test/support/processes.ts';
import { findPrlimit } from './address-space-limit.ts';
import { diesWithParentCommand, findSetpriv } from './parent-death.ts';

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
      process.kill(guarded.parent, 'SIGKILL');
      process.kill(unguarded.parent, 'SIGKILL');
      await waitUntil(() => !isAlive(guarded.child), 'the guarded child to end with its parent', 10_000);
      await waitUntil(() => !isAlive(unguarded.parent), 'the other parent to end', 10_000);
      expect(isAlive(unguarded.child)).toBe(true);
    } finally {
      for (const pid of [guarded.parent, unguarded.parent, guarded.child, unguarded.child]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
