/**
 * A sidecar that cannot keep its stray descriptors from a child launches nothing, and says why
 * (DESIGN §5: no stray descriptors; fail closed). Two real situations, each a real process
 * running the real ProcessExecutor and bubblewrap probe (`launch-refusal-runner.ts`):
 *
 * - no `/proc` (a mount namespace with an empty tmpfs over it, as a container without one): the
 *   descriptors a child would inherit cannot be listed. This launched with none masked before.
 * - a descriptor without close-on-exec at the last number its open-files limit allows: libuv
 *   cannot copy the mask's `/dev/null` above it, and the spawn failed with a bare `EINVAL`. One
 *   number lower it is masked as any other.
 *
 * And one a sidecar meets without strays: a spawn that runs out of descriptors (EMFILE) before
 * its pipes exist, which took the whole process down (and left a probe run then cached as the
 * host's verdict for good).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/paths.ts';

const RUNNER = join(REPO, 'test/sandbox/launch-refusal-runner.ts');
const NODE_RUNNER = [process.execPath, '--import', 'tsx', RUNNER];

interface Outcome {
  launch: { started: boolean; exit?: { code: number | null }; reason?: string; message?: string; detail?: Record<string, unknown>; cause?: string | null };
  spawned: number;
  probe: { available: boolean; message?: string };
  probeWhileFull: { available: boolean; problem?: string; message?: string } | null;
}

async function run(file: string, args: string[]): Promise<Outcome> {
  const child = spawn(file, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('close', resolve));
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as Outcome;
}

/**
 * The runner under an open-files limit of 256, holding `/dev/null` at `fd` without close-on-exec
 * and no other stray: bash first closes whatever this test's own process passed on above 2.
 */
const underLimit = (fd: number): Promise<Outcome> =>
  run('/bin/bash', ['-c', `for n in $(ls /proc/$$/fd); do [ "$n" -gt 2 ] && eval "exec $n<&-"; done; ulimit -n 256 && exec ${fd}</dev/null && exec "$@"`, 'bash', ...NODE_RUNNER]);

describe.runIf(process.platform === 'linux')('a launch that cannot keep strays from its child', () => {
  it('is refused, naming /proc/self/fd, when the sidecar cannot list its descriptors', async () => {
    const outcome = await run('/usr/bin/bwrap', ['--unshare-user', '--uid', String(process.getuid!()), '--dev-bind', '/', '/', '--tmpfs', '/proc', '--', ...NODE_RUNNER]);
    expect(outcome.launch).toMatchObject({
      started: false,
      reason: 'launch-failed',
      message: 'Cannot start process: cannot list the descriptors a child would inherit, /proc/self/fd is unreadable: ENOENT',
      cause: 'descriptors-unreadable',
    });
    expect(outcome.spawned).toBe(0);
    // Nor does a probe run: containment then counts as unavailable, with the same reason.
    expect(outcome.probe.available).toBe(false);
    expect(outcome.probe.message).toContain('/proc/self/fd is unreadable');
  });

  it('is refused, naming the descriptor and the limit, when a stray sits at the last number the limit allows', async () => {
    const outcome = await underLimit(255);
    expect(outcome.launch).toMatchObject({ started: false, reason: 'launch-failed', detail: { fd: 255, limit: 256 }, cause: 'descriptor-out-of-reach' });
    expect(outcome.launch.message).toBe(
      'Cannot start process: the sidecar holds fd 255 without close-on-exec, too near its open-files limit (256) for a spawn to mask it: close it before the sidecar starts, or raise the limit (ulimit -n)',
    );
    expect(outcome.spawned).toBe(0);
    expect(outcome.probe.available).toBe(false);
    expect(outcome.probe.message).toContain('the sidecar holds fd 255 without close-on-exec');
  });

  it('is refused with EMFILE, and the process goes on, when the spawn runs out of descriptors before its pipes exist', async () => {
    // Node emits that error a tick after spawn() returned a child without stdio; unheard, it ended the process.
    const outcome = await run(process.execPath, ['--import', 'tsx', RUNNER, '--out-of-descriptors']);
    expect(outcome.launch).toMatchObject({ started: false, reason: 'launch-failed', message: 'Cannot start process: spawn failed: EMFILE', detail: { errno: 'EMFILE' } });
    // The probe could not run bwrap then; that is not kept as the host's verdict, and the next one runs it.
    expect(outcome.probeWhileFull).toMatchObject({ available: false, problem: 'unusable' });
    expect(outcome.probeWhileFull?.message).toContain('EMFILE');
    expect(outcome.probe).toMatchObject({ available: true });
  });

  it('masks a stray one number lower under the same limit, and the launch and the probe go ahead', async () => {
    const outcome = await underLimit(254);
    expect(outcome.launch).toMatchObject({ started: true, exit: { code: 0 } });
    expect(outcome.spawned).toBe(1);
    expect(outcome.probe).toMatchObject({ available: true });
  });
});
