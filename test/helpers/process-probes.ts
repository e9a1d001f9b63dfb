/**
 * Process and port probes every real-process test shares. One definition of "alive": a zombie
 * is gone, because on machines whose PID 1 never reaps, a killed orphan stays a zombie forever
 * and `kill(pid, 0)` alone would call it alive.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { BubblewrapPolicy } from '../../sidecar/sandbox/containment-policy.ts';

/** True while `pid` is a live (non-zombie) process. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** The pids among `pids` that are still alive. */
export function livePids(pids: readonly number[]): number[] {
  return pids.filter(isAlive);
}

/** Polls `probe` every 25 ms until it returns a value, failing after `tries` attempts. */
export async function waitFor<T>(probe: () => T | undefined, what: string, tries = 400): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

/** A free TCP port on 127.0.0.1 (free when asked; the caller binds it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** A minimal working bubblewrap sandbox for this Debian host: read-only /usr and `repo`, no network. */
export function testBubblewrapPolicy(
  repo: string,
  options: { extra?: readonly string[]; executable?: string; env?: Record<string, string> } = {},
): BubblewrapPolicy {
  return {
    backend: 'bubblewrap',
    executable: options.executable ?? '/usr/bin/bwrap',
    args: [
      '--unshare-all', '--die-with-parent', '--new-session',
      '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64',
      '--symlink', 'usr/bin', '/bin', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp',
      '--ro-bind', repo, repo, ...(options.extra ?? []),
    ],
    env: { PATH: '/usr/bin:/bin', ...options.env },
    cwd: repo,
    revision: 'sha256:test',
  };
}
