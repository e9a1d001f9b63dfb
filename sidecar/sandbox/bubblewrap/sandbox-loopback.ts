/**
 * Waits for bwrap to have given the sandbox's network namespace its loopback address, so that
 * slirp4netns only starts after it (`internet-client`).
 *
 * bwrap reports the sandbox's PID 1 right after `clone`, before that child sets up anything: the
 * child then adds 127.0.0.1/8 to `lo` with `RTM_NEWADDR` and `NLM_F_EXCL`, and brings `lo` up
 * (bubblewrap `network.c`, `loopback_setup`). slirp4netns `--configure` brings `lo` up too, as its
 * first step (`SIOCSIFFLAGS`), and the kernel gives a loopback device 127.0.0.1/8 of its own as it
 * comes up. When slirp4netns got there first, bwrap's exclusive add fails with EEXIST, and since
 * bwrap's `rtnl_read_reply` returns that netlink error without setting `errno`, bwrap dies with
 * whatever `errno` held: `bwrap: loopback: Failed RTM_NEWADDR: No child processes`. Started
 * once the address exists, slirp4netns's `lo` up is a no-op for the address and harmless for the
 * link.
 *
 * The address shows in the namespace's routing table as a local /32 route as soon as it is added
 * (`/proc/PID/net/fib_trie`, readable by the sidecar without entering the namespace). Nothing
 * signals it, so the table is read (every 1 ms at first, backing off to 16 ms) until it does,
 * until PID 1 is gone (bwrap failed: its exit reports the failure), or until `timeoutMs`.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';

/** `up`: bwrap added it; `gone`: the sandbox's PID 1 exited first; `unknown`: the table cannot be read here, or it took too long. */
export type LoopbackState = 'up' | 'gone' | 'unknown';

/** The local /32 route of 127.0.0.1, as `fib_trie` lists it under `|-- 127.0.0.1`. */
const LOOPBACK_LOCAL = /\|-- 127\.0\.0\.1\n\s+\/32 host LOCAL/;

/**
 * @param pid The sandbox's PID 1 as the host sees it (bwrap's `child-pid`).
 * @returns Once the sandbox's loopback has 127.0.0.1, or once that cannot be known.
 */
export async function whenLoopbackAddressed(pid: number, options: { pollMs?: number; timeoutMs?: number } = {}): Promise<LoopbackState> {
  // bwrap usually has it within a few ms; a slow start on a loaded host is not read 1,000 times a second.
  let pollMs = options.pollMs ?? 1;
  const deadline = performance.now() + (options.timeoutMs ?? 5_000);
  const table = `/proc/${pid}/net/fib_trie`;
  for (;;) {
    let text: string;
    try {
      text = await readFile(table, 'utf8');
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH' ? 'gone' : 'unknown';
    }
    if (LOOPBACK_LOCAL.test(text)) return 'up';
    if (performance.now() >= deadline) return 'unknown';
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    pollMs = Math.min(pollMs * 2, 16);
  }
}
