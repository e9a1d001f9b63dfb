import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isAlive, waitFor } from '../../test/support/processes.ts';
import { silentLogger } from '../log.ts';
import { ChildProcessHandle, startTimeOf } from './process-handle.ts';

/** A leader that starts a process in a session of its own (as bwrap's PID 1 does), prints its pid, and ends on SIGTERM. */
const LEADER = "const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', detached: true }); c.unref(); console.log(c.pid); setInterval(() => {}, 1000)";

async function start(): Promise<{ handle: ChildProcessHandle; outside: number }> {
  const child = spawn(process.execPath, ['-e', LEADER], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const handle = new ChildProcessHandle(child, { stdinGraceMs: 50, termGraceMs: 2000 }, silentLogger);
  const line = await new Promise<string>((resolve) => handle.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())));
  return { handle, outside: Number(line.trim()) };
}

describe('ChildProcessHandle', () => {
  it('ends an adopted process outside its group with the group: at a kill, and once the group ended on SIGTERM', async () => {
    for (const graceMs of [0, 2000]) {
      const { handle, outside: pid } = await start();
      expect(isAlive(pid)).toBe(true);
      try {
        handle.adopt(pid);
        await handle.dispose(graceMs);
        await waitFor(() => (isAlive(pid) ? undefined : true), `the adopted process to end (grace ${graceMs} ms)`);
      } finally {
        if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      }
    }
  });

  it('signals an adopted process only while it is the one adopted', async () => {
    expect(startTimeOf(process.pid)).toMatch(/^\d+$/);
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    const pid = child.pid!;
    const before = startTimeOf(pid);
    expect(before).toBeDefined();
    await new Promise((resolve) => child.once('exit', resolve));
    // Gone (reaped): no start time, so nothing a later process with its pid would be sent.
    expect(startTimeOf(pid)).toBeUndefined();
  });
});
