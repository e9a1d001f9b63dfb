/**
 * Run by `loopback-as-user.test.ts` as a user other than root (under `setpriv` when the suite
 * runs as root), the way a workstation runs its sidecar. It starts a sandbox as that user (bwrap
 * with the probe's namespace options and the policy's `/proc` and `/dev`, held at its block fd as
 * an `internet-client` sandbox is held until its network is up) and prints, as JSON, its uid and
 * what `whenLoopbackAddressed` makes of the sandbox's PID 1, read from outside the sandbox as the
 * backend reads it.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { readChildPid } from '../../sidecar/sandbox/bubblewrap/bubblewrap-ready.ts';
import { whenLoopbackAddressed } from '../../sidecar/sandbox/bubblewrap/sandbox-loopback.ts';

async function main(): Promise<void> {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--json-status-fd', '3', '--block-fd', '4', '--', '/usr/bin/true'];
  const bwrap = spawn('/usr/bin/bwrap', args, { stdio: ['ignore', 'ignore', 'inherit', 'pipe', 'pipe'] });
  const closed = new Promise((resolve) => bwrap.once('close', (code) => resolve(code)));
  const pid = await readChildPid(bwrap.stdio[3] as Readable);
  const wait = pid === null ? 'no child-pid' : await whenLoopbackAddressed(pid);
  (bwrap.stdio[4] as Writable).end('1');
  process.stdout.write(JSON.stringify({ uid: process.getuid?.(), wait, bwrapExit: await closed }) + '\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
