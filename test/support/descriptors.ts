/**
 * Stray descriptors for the tests of DESIGN §5's "no stray descriptors": a spawn whose child
 * inherits pipes at high numbers without close-on-exec (as a shell's left-open pipe would be),
 * what a process holds as `/proc/PID/fd` shows it, and stand-in tools that list what they were
 * started with.
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Every descriptor a test's runner inherits as a stray: above the few low ones Node marks close-on-exec at start. */
export const STRAYS = [40, 100] as const;

/**
 * A spawn's `stdio` with stdout, stderr and each of `strays` a pipe (libuv leaves a piped entry
 * above 2 without close-on-exec in the child, so the child holds it as it would an inherited one).
 */
export function strayStdio(strays: readonly number[] = STRAYS): ('pipe' | 'ignore')[] {
  return Array.from({ length: Math.max(...strays) + 1 }, (_, fd) => (fd === 1 || fd === 2 || strays.includes(fd) ? 'pipe' : 'ignore'));
}

/** Each descriptor of `pid` with what it points to (`pipe:[…]`, a path, `/dev/null`). */
export function descriptorsOf(pid: number | 'self'): Record<number, string> {
  const found: Record<number, string> = {};
  for (const entry of readdirSync(`/proc/${pid}/fd`)) {
    try {
      found[Number(entry)] = readlinkSync(`/proc/${pid}/fd/${entry}`);
    } catch {
      // closed meanwhile
    }
  }
  return found;
}

/** Whether `pid`'s descriptor `fd` would reach a child it spawned (open without `O_CLOEXEC`). */
export function inheritable(pid: number, fd: number): boolean {
  const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))?.[1];
  return flags !== undefined && (Number.parseInt(flags, 8) & 0o2000000) === 0;
}

/** The child of `pid` whose command name (`/proc/<pid>/comm`) is `comm`, if it has one now. */
export function childNamed(pid: number, comm: string): number | undefined {
  return childrenOf(pid).find((child) => {
    try {
      return readFileSync(`/proc/${child}/comm`, 'utf8').trim() === comm;
    } catch {
      return false; // ended meanwhile
    }
  });
}

/** The children of every thread of `pid`. */
export function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((task) => readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/**
 * Writes an executable `dir/name` that appends what it holds to `dir/name.fds` (one block per run)
 * and prints `stdout`: a stand-in for a tool the code under test runs.
 *
 * @returns Its path.
 */
export function fdListingStandIn(dir: string, name: string, stdout: string): string {
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\n{ for f in /proc/$$/fd/*; do printf '%s %s\\n' "\${f##*/}" "$(readlink "$f")"; done; echo; } >> "$0.fds"\necho '${stdout}'\n`, { mode: 0o755 });
  return file;
}

/** What each run of the stand-in at `file` held, in the order they ran; none when it never ran. */
export function standInRuns(file: string): Record<number, string>[] {
  if (!existsSync(`${file}.fds`)) return [];
  return readFileSync(`${file}.fds`, 'utf8')
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => Object.fromEntries(block.trim().split('\n').map((line) => [Number(line.split(' ')[0]), line.slice(line.indexOf(' ') + 1)])));
}

/**
 * Who holds the other end of this process's socket-pair descriptor `fd` (Node's pipes to a child
 * are socket pairs, whose peers `ss` names): each holder as `ss` lists it ("name",pid=…,fd=…),
 * or why that cannot be told.
 */
export function peerHoldersOf(fd: number): string[] {
  let inode: string | undefined;
  try {
    inode = /\[(\d+)\]/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
  } catch {
    return ['unknown (closed)'];
  }
  if (inode === undefined) return ['unknown (not a socket)'];
  let listing: string;
  try {
    listing = execFileSync('ss', ['-xpn'], { encoding: 'utf8' });
  } catch (error) {
    return [`unknown (ss: ${(error as Error).message})`];
  }
  // "u_str ESTAB 0 0 * LOCAL * PEER users:(…)": the line whose peer is ours is the other end's.
  return listing.split('\n').flatMap((line) => {
    const ends = /\*\s+(\d+)\s+\*\s+(\d+)/.exec(line);
    return ends !== null && ends[2] === inode ? [/users:\((.*)\)/.exec(line)?.[1] ?? line.trim()] : [];
  });
}
