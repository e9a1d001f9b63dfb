/**
 * The loopback wait (`sandbox-loopback.ts`) reads `/proc/PID/net/fib_trie` of the sandbox's PID 1
 * from outside the sandbox. Workstations run the sidecar as an ordinary user, while everything
 * else here runs as root, which may read anything; so the runner does it as a user other than
 * root (a uid with no account, under `setpriv`, when this suite runs as root; itself otherwise).
 * The table is readable there too (the namespace's `/proc/PID/net` files are 0444 and the kernel
 * makes no ptrace check on `/proc/PID/net`), so the wait sees the address come up. And the
 * network it waits for comes up as that user: an `internet-client` launch through the real
 * executor reaches slirp4netns's 10.0.2.100, with nothing logged (slirp4netns joined the
 * sandbox's outer user namespace, opened when bwrap reported its PID 1: `user-mode-network.ts`).
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../support/paths.ts';
import { unprivilegedUserNamespaces, unusedUid } from '../support/unprivileged-user.ts';

const SETPRIV = '/usr/bin/setpriv';
const root = process.getuid?.() === 0;


const uid = unusedUid();
const home = mkdtempSync(join(tmpdir(), 'sy-loopback-user-home-'));
if (root) chownSync(home, uid, uid);
afterAll(() => rmSync(home, { recursive: true, force: true }));

// Skipped off Linux, without bwrap or slirp4netns, where only root may create user namespaces (no
// sidecar runs contained as a user there), and as root without setpriv to become another user.
const runs = process.platform === 'linux' && existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/slirp4netns') && unprivilegedUserNamespaces && (!root || existsSync(SETPRIV));

describe.runIf(runs)('the sandbox loopback wait, as a user other than root', () => {
  it("reads the routing table of that user's sandbox from outside it, and an internet-client launch gets its network", async () => {
    const node = [process.execPath, '--import', 'tsx', join(REPO, 'test/sandbox/loopback-as-user-runner.ts')];
    const [file, ...args] = root ? [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', ...node] : node;
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: home, TSX_DISABLE_CACHE: '1' };
    const { stdout } = await promisify(execFile)(file!, args, { cwd: REPO, env });
    const result = JSON.parse(stdout) as { uid: number; wait: string; bwrapExit: number; launch: { exited: unknown; stdout: string; warnings: Array<{ msg: string }>; startedAgain: number } };
    expect(result.uid).not.toBe(0);
    if (root) expect(result.uid).toBe(uid);
    expect(result).toMatchObject({ wait: 'up', bwrapExit: 0 });
    // No warning, but for a sandbox that lost the race with bwrap's nesting on a loaded machine
    // (its network did not start) and was started again: at most one each (a full run, s31). A
    // loss seen before slirp4netns started is started again without one.
    expect(result.launch.warnings.map((warning) => warning.msg)).toEqual(Array(result.launch.warnings.length).fill('User-mode network did not start'));
    expect(result.launch.warnings.length).toBeLessThanOrEqual(result.launch.startedAgain);
    expect(result.launch.exited).toEqual({ code: 0, signal: null });
    expect(result.launch.stdout).toMatch(/\|-- 127\.0\.0\.1\n\s+\/32 host LOCAL/);
    expect(result.launch.stdout).toMatch(/\|-- 10\.0\.2\.100\n\s+\/32 host LOCAL/);
  });
});
