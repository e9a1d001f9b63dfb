/**
 * Descriptors the sidecar inherited and must not pass on (DESIGN §5: no stray descriptors).
 *
 * libuv does not close a parent's descriptors when it spawns a child: every descriptor without
 * `O_CLOEXEC` reaches the child, and through bwrap the server inside the sandbox (a pipe a shell
 * left open showed up as fd 251 inside). Everything Node and libuv open is `O_CLOEXEC` (files,
 * sockets, the parent ends of child pipes, the IPC channel of a forked process), and so is every
 * descriptor the sandbox backends open for a launch, so a descriptor ≥ 3 without the flag can
 * only have come from whoever started the sidecar. Nothing in the sidecar uses those, so they are
 * closed: once at start, and again before every spawn, since a library could still have opened
 * one.
 *
 * Linux only (it reads `/proc/self/fdinfo`); elsewhere it does nothing.
 *
 * @module
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** `O_CLOEXEC` as `/proc/self/fdinfo/N` prints it in its octal `flags:` line. */
const O_CLOEXEC = 0o2000000;

/**
 * The descriptors ≥ 3 of this process that a spawned child would inherit.
 *
 * @returns Their numbers, ascending; empty off Linux.
 */
export function inheritableDescriptors(): number[] {
  if (process.platform !== 'linux') return [];
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd < 3) continue;
    let info: string;
    try {
      info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // gone meanwhile, or the directory handle readdirSync itself used
    }
    const flags = /^flags:\s*([0-7]+)/m.exec(info);
    if (flags !== null && (Number.parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) found.push(fd);
  }
  return found.sort((a, b) => a - b);
}

/**
 * Closes every descriptor ≥ 3 that a spawned child would inherit.
 *
 * @returns The descriptors closed, for the log.
 * @example At sidecar start
 * ```ts
 * const closed = closeInheritedDescriptors();
 * if (closed.length > 0) log.info('Closed inherited descriptors', { fds: closed });
 * ```
 */
export function closeInheritedDescriptors(): number[] {
  const closed: number[] = [];
  for (const fd of inheritableDescriptors()) {
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // already closed
    }
  }
  return closed;
}
