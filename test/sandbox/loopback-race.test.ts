/**
 * The CI flake `bwrap: loopback: Failed RTM_NEWADDR: No child processes` on `internet-client`
 * launches (2–3 in 30 under load). bwrap reports the sandbox's PID 1 before that child has set up
 * its loopback, and the sidecar started slirp4netns on that report; slirp4netns brings `lo` up
 * first thing, the kernel then gives it 127.0.0.1 itself, and bwrap's exclusive add of the same
 * address fails with EEXIST (reported with a stale errno). Now slirp4netns starts once bwrap has
 * added the address (`sandbox-loopback.ts`).
 *
 * The race is made certain instead of waited for: the real bwrap runs under `strace`, which holds
 * each `socket()` call back for half a second on its way in. Only bwrap's sandbox child calls it,
 * for the netlink socket of its loopback setup; slirp4netns, started early, would have brought
 * `lo` up long before. The assertion is on the outcome, never on the time.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../sidecar/log.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';

const STRACE = '/usr/bin/strace';
const dir = mkdtempSync(join(tmpdir(), 'sy-loopback-race-'));
const slowBwrap = join(dir, 'bwrap');
writeFileSync(slowBwrap, `#!/bin/sh\nexec ${STRACE} -f -qq -o /dev/null -e trace=socket -e inject=socket:delay_enter=500000 /usr/bin/bwrap "$@"\n`);
chmodSync(slowBwrap, 0o755);
// Warnings to stderr: a failed setup then shows bwrap's own words.
const executor = new ProcessExecutor({ termGraceMs: 200, logger: createLogger({ level: 'warn' }) });
afterAll(async () => {
  await executor.disposeAll();
  rmSync(dir, { recursive: true, force: true });
});

describe.runIf(existsSync(STRACE))('an internet-client sandbox whose loopback setup is slow (strace holds bwrap back; skipped without strace)', () => {
  it('starts its network only after bwrap set up the loopback, and the command runs', async () => {
    const policy = await compileContainment(
      { ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: dir, targetPath: dir, accessMode: 'read-only' }], networkCapabilities: ['internet-client'] },
      { file: '/usr/bin/cat', args: ['/proc/net/fib_trie'] },
      { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe(slowBwrap) },
    );
    expect(policy).not.toBeNull();
    const handle = await executor.launch({ command: '/usr/bin/cat', args: ['/proc/net/fib_trie'], env: {}, policy });
    let stdout = '';
    handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    // The exit can come before the last of stdout: both are waited for.
    const drained = new Promise((resolve) => handle.stdout.once('close', resolve));
    expect(await handle.exited).toEqual({ code: 0, signal: null });
    await drained;
    // The sandbox's own routing table: its loopback, and the slirp4netns network started after it.
    expect(stdout).toMatch(/\|-- 127\.0\.0\.1\n\s+\/32 host LOCAL/);
    expect(stdout).toMatch(/\|-- 10\.0\.2\.100\n\s+\/32 host LOCAL/);
  });
});
