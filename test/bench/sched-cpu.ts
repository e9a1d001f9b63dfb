/**
 * A process's CPU time from /proc, in ns: what every CPU figure of the bench is read from
 * (`processes.ts` `cpuMs`).
 *
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * ns a process has run on a CPU so far, summed over its threads (/proc/<pid>/task/<tid>/schedstat):
 * exact where /proc's utime and stime count 10 ms ticks, which a batch of a few hundred calls is
 * only tens of.
 */
export function schedCpuNs(pid: number): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return sum;
}
