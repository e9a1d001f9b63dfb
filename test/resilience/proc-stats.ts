/**
 * What the resilience suite reads about processes from /proc (Linux, as the suite's bubblewrap
 * already requires): whether they still run, their memory and CPU, and their listening ports.
 *
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Pids among `pids` still running. A zombie does not count: a server orphaned by a SIGKILLed
 * sidecar is reparented to PID 1, which in some containers never reaps it.
 */
export { livePids as alive } from '../support/processes.ts';

/** Resident set size of a process in MiB, from /proc (Linux). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux); 0 once it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks of 10 ms
  } catch {
    return 0;
  }
}

/** TCP ports a process listens on, from its socket fds and /proc/net (Linux). */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set(readdirSync(`/proc/${pid}/fd`).flatMap((fd) => /^socket:\[(\d+)\]$/.exec(safeReadlink(`/proc/${pid}/fd/${fd}`))?.[1] ?? []));
  return ['tcp', 'tcp6'].flatMap((table) =>
    readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1).flatMap((row) => {
      const cols = row.trim().split(/\s+/);
      return cols[3] === '0A' && inodes.has(cols[9] ?? '') ? [Number.parseInt(cols[1]!.split(':')[1]!, 16)] : [];
    }),
  );
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}
