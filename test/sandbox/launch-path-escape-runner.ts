/**
 * Run by `launch-path-escape.test.ts` as a user other than root (under `setpriv` when the suite
 * runs as root), the way a workstation runs its sidecar, with a directory that user can write
 * first on its `PATH` and a stand-in for every tool the sidecar runs around a server planted there.
 * It prints, as JSON, its uid, the tools the sidecar would run, and how a contained launch compiled
 * with the default probes went.
 */
import { createLogger } from '../../sidecar/log.ts';
import { findPrlimit } from '../../sidecar/process/address-space-limit.ts';
import { findSetpriv } from '../../sidecar/process/parent-death.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapExecutable, compileContainment, userModeNetworkExecutable } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';

const executor = new ProcessExecutor({ termGraceMs: 200, logger: createLogger({ level: 'error' }) });
const tools = { bwrap: bubblewrapExecutable(), slirp4netns: userModeNetworkExecutable(), prlimit: findPrlimit(process.env), setpriv: findSetpriv(process.env) };
let launch: { code: number | null; stdout: string } | { error: string };
try {
  const file = '/usr/bin/echo';
  const policy = await compileContainment({ ...NEUTRAL_PROFILE, networkCapabilities: [] }, { file, args: ['contained'] }, { revision: 'sha256:test', platform: 'linux' });
  const handle = await executor.launch({ command: file, args: ['contained'], env: {}, policy });
  let stdout = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const [exit] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  launch = { code: exit.code, stdout: stdout.trim() };
} catch (error) {
  launch = { error: (error as Error).message };
} finally {
  await executor.disposeAll();
}
process.stdout.write(JSON.stringify({ uid: process.getuid!(), tools, launch }));
