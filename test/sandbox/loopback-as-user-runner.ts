/**
 * Run by `loopback-as-user.test.ts` as a user other than root (under `setpriv` when the suite
 * runs as root), the way a workstation runs its sidecar. It prints, as JSON, its uid and:
 * - `wait`: what `whenLoopbackAddressed` makes of a sandbox this user started (bwrap with the
 *   probe's namespace options and the policy's `/proc` and `/dev`, held at its block fd as an
 *   `internet-client` sandbox is held until its network is up), read from outside the sandbox as
 *   the backend reads it;
 * - `launch`: an `internet-client` launch of `cat /proc/net/fib_trie` through the real executor:
 *   how it exited, what it printed and every warning the sidecar logged.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../sidecar/log.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { readChildPid } from '../../sidecar/sandbox/bubblewrap/bubblewrap-ready.ts';
import { whenLoopbackAddressed } from '../../sidecar/sandbox/bubblewrap/sandbox-loopback.ts';
import { bubblewrapProbe, compileContainment } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';

const BWRAP = '/usr/bin/bwrap';

async function launch(): Promise<{ exited: unknown; stdout: string; warnings: unknown[]; startedAgain: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-loopback-as-user-'));
  const warnings: unknown[] = [];
  // A sandbox that lost the race with bwrap's nesting (a loaded machine) is said at warn, then started again.
  let startedAgain = 0;
  const record = (line: string) => {
    const entry = JSON.parse(line) as { level: string; msg: string };
    if (entry.level === 'warn' || entry.level === 'error') warnings.push(entry);
    if (entry.msg === 'Contained launch started again') startedAgain += 1;
  };
  const executor = new ProcessExecutor({ termGraceMs: 200, logger: createLogger({ level: 'info', write: record }) });
  try {
    const file = '/usr/bin/cat';
    const args = ['/proc/net/fib_trie'];
    const policy = await compileContainment(
      { ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: dir, targetPath: dir, accessMode: 'read-only' }], networkCapabilities: ['internet-client'] },
      { file, args },
      { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe(BWRAP) },
    );
    const handle = await executor.launch({ command: file, args, env: {}, policy });
    let stdout = '';
    handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    // Its exit can come before the last of its output: both, before reading what it printed.
    const [exited] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
    return { exited, stdout, warnings, startedAgain };
  } catch (error) {
    return { exited: (error as Error).message, stdout: '', warnings, startedAgain };
  } finally {
    await executor.disposeAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function waitOnOwnSandbox(): Promise<{ wait: string; bwrapExit: unknown }> {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--json-status-fd', '3', '--block-fd', '4', '--', '/usr/bin/true'];
  const bwrap = spawn(BWRAP, args, { stdio: ['ignore', 'ignore', 'inherit', 'pipe', 'pipe'] });
  const closed = new Promise((resolve) => bwrap.once('close', (code) => resolve(code)));
  const pid = await readChildPid(bwrap.stdio[3] as Readable);
  const wait = pid === null ? 'no child-pid' : await whenLoopbackAddressed(pid);
  (bwrap.stdio[4] as Writable).end('1');
  return { wait, bwrapExit: await closed };
}

async function main(): Promise<void> {
  const own = await waitOnOwnSandbox();
  process.stdout.write(JSON.stringify({ uid: process.getuid?.(), ...own, launch: await launch() }) + '\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
