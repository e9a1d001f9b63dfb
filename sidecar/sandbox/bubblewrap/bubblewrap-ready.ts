/**
 * Knows when a bubblewrap sandbox has finished its setup, so a contained launch is handed out as
 * soon as the server runs instead of after a fixed wait.
 *
 * bwrap's `--json-status-fd` reports `{"child-pid": N}` right after it clones the sandbox, before
 * mounts are made (a bad bind still fails after it). With a PID namespace the sandbox's PID 1 (N,
 * as the host sees it) forks the command only once setup succeeded, so N having a child means the
 * sandbox is ready. Read from `/proc/N/task/N/children`; where the kernel lacks that file the
 * caller falls back to its fixed window.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';

export type SandboxReadiness = 'ready' | 'unknown';

/** Resolves `ready` once the sandbox's PID 1 has a child, `unknown` when that cannot be told. */
export async function whenSandboxReady(status: Readable, signal: AbortSignal, pollMs = 2): Promise<SandboxReadiness> {
  const childPid = await Promise.race([readChildPid(status), new Promise<null>((resolve) => (signal.aborted ? resolve(null) : signal.addEventListener('abort', () => resolve(null), { once: true })))]);
  return childPid === null ? 'unknown' : whenCommandRuns(childPid, signal, pollMs);
}

/** Resolves `ready` once the sandbox's PID 1 (`childPid`) has a child, `unknown` when that cannot be told. */
export async function whenCommandRuns(childPid: number, signal: AbortSignal, pollMs = 2): Promise<SandboxReadiness> {
  const children = `/proc/${childPid}/task/${childPid}/children`;
  while (!signal.aborted) {
    let text: string;
    try {
      text = await readFile(children, 'utf8');
    } catch (error) {
      // ENOENT once PID 1 is gone (setup failed: the exit path reports it); other errors: no /proc support.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Promise(() => {});
      return 'unknown';
    }
    if (text.trim() !== '') return 'ready';
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return 'unknown';
}

/**
 * Reads the sandbox's PID 1 from the first JSON document on the status fd, or `null` when the fd
 * ends without one; keeps draining the fd afterwards so bwrap never blocks on it.
 */
export function readChildPid(status: Readable): Promise<number | null> {
  return new Promise((resolve) => {
    let buffered = '';
    const finish = (pid: number | null) => {
      status.off('data', onData);
      status.off('end', onEnd);
      status.off('close', onEnd);
      status.resume();
      resolve(pid);
    };
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const match = /"child-pid"\s*:\s*(\d+)/.exec(buffered);
      if (match) finish(Number(match[1]));
      else if (buffered.length > 4096) finish(null);
    };
    const onEnd = () => finish(null);
    status.on('error', () => {});
    status.on('data', onData);
    status.once('end', onEnd);
    status.once('close', onEnd);
  });
}
