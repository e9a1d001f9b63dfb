/**
 * Security review, findings 2 and 3. A sidecar running as root (as CI does) maps the server to
 * kuid 0, and sysctl writes are checked against that uid, not capabilities: the sandbox could
 * write `kernel.core_pattern` (host root code execution). And with no seccomp filter the sandbox
 * could read and write the sidecar's kernel session keyring, and reach perf, io_uring, bpf and the
 * rest. Now `/proc/sys` is read-only and every launch runs under `seccomp-filter.ts`.
 *
 * Real bubblewrap through the real compiler and executor, from `sandbox-hardening-runner.ts`: as
 * this suite's user, and as a user other than root (a uid with no account, under `setpriv`, when
 * the suite runs as root), the way a workstation runs its sidecar. Syscall numbers come from the
 * host's own headers (perl's `syscall.ph`), not from the filter's table, so a wrong number in the
 * table fails here.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../support/paths.ts';
import { unprivilegedUserNamespaces, unusedUid } from '../support/unprivileged-user.ts';

const BWRAP = '/usr/bin/bwrap';
const PERL = '/usr/bin/perl';
const SETPRIV = '/usr/bin/setpriv';
const root = process.getuid?.() === 0;
const { EPERM, ENOSYS, EAFNOSUPPORT, EROFS } = constants.errno;


/**
 * Prints `name errno` for each probe (0: it succeeded). Arguments are passed where the call would
 * fail with EFAULT or EINVAL if it got through, so nothing here changes the host when unfiltered,
 * but for writing `core_pattern`'s own value back.
 */
const PROBES = String.raw`
require "syscall.ph";
sub report { my ($name, $r) = @_; print "$name ", ($r == -1 ? $! + 0 : 0), "\n"; }
open(my $status, '<', '/proc/self/status') or die "status: $!";
my ($seccomp) = map { /^Seccomp:\s*(\d+)/ ? $1 : () } <$status>;
print "seccomp $seccomp\n";
open(my $in, '<', '/proc/sys/kernel/core_pattern') or die "core_pattern: $!";
my $pattern = <$in>;
close $in;
if (open(my $out, '>', '/proc/sys/kernel/core_pattern')) { my $ok = (print $out $pattern) && close($out); report('core_pattern', $ok ? 0 : -1) } else { report('core_pattern', -1) }
report('keyctl', syscall(SYS_keyctl(), 0, -3, 0));
my $c = 'x';
report('tiocsti', syscall(SYS_ioctl(), 0, 0x5412, $c));
report('tiocsti-high-bits', syscall(SYS_ioctl(), 0, 0x5412 | (1 << 32), $c));
report('tioclinux', syscall(SYS_ioctl(), 0, 0x541c, $c));
report('perf_event_open', syscall(SYS_perf_event_open(), 0, 0, -1, -1, 0));
report('io_uring_setup', syscall(SYS_io_uring_setup(), 1, 0));
report('clone3', syscall(SYS_clone3(), 0, 0));
report('unshare-user', syscall(SYS_unshare(), 0x10000000));
report('personality-32', syscall(SYS_personality(), 8));
report('personality-query', syscall(SYS_personality(), 0xffffffff));
report('socket-vsock', syscall(SYS_socket(), 40, 1, 0));
report('socket-inet', syscall(SYS_socket(), 2, 1, 0));
open(my $made, '>', '/tmp/made') or die "made: $!"; close $made;
report('chmod-setuid', chmod(04755, '/tmp/made') ? 0 : -1);
report('chmod-setgid', chmod(02755, '/tmp/made') ? 0 : -1);
open(my $held, '<', '/tmp/made') or die "held: $!";
report('fchmod-setuid', chmod(04755, $held) ? 0 : -1);
my ($path, $created, $node) = ('/tmp/made', '/tmp/created', '/tmp/node');
report('fchmodat2-setuid', syscall(452, -100, $path, 04755, 0));
report('openat-setuid', syscall(SYS_openat(), -100, $created, 0101, 04755) == -1 ? -1 : 0);
report('mknodat-setuid', syscall(SYS_mknodat(), -100, $node, 0100000 | 04755, 0));
report('chmod-plain', chmod(0750, '/tmp/made') ? 0 : -1);
printf "made-mode %o\n", (stat('/tmp/made'))[2] & 07777;
`;

/** What a node server does at start and later: threads (glibc tries clone3 first), children, a loopback socket. */
const STILL_WORKS = `
const { Worker } = require('node:worker_threads');
const { execFileSync } = require('node:child_process');
const net = require('node:net');
const fs = require('node:fs');
new Worker('require("node:worker_threads").parentPort.postMessage(1)', { eval: true }).once('message', () => {
  execFileSync('/bin/true');
  fs.writeFileSync('/tmp/x', 'y');
  const server = net.createServer((s) => s.end('pong')).listen(0, '127.0.0.1', () => {
    net.connect(server.address().port, '127.0.0.1').on('data', (d) => { console.log('ok ' + d); server.close(); process.exit(0); });
  });
});`;

interface Launched {
  uid: number;
  exited: { code: number | null; signal: string | null };
  stdout: string;
  stderr: string;
  warnings: unknown[];
}

const uid = unusedUid(61_100);
const home = mkdtempSync(join(tmpdir(), 'sy-hardening-home-'));
if (root) chownSync(home, uid, uid);
afterAll(() => rmSync(home, { recursive: true, force: true }));

async function launch(asOther: boolean, file: string, args: string[], network: string[] = []): Promise<Launched> {
  const node = [process.execPath, '--import', 'tsx', join(REPO, 'test/sandbox/sandbox-hardening-runner.ts'), JSON.stringify({ file, args, network })];
  const [command, ...rest] = asOther && root ? [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', ...node] : node;
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: asOther ? home : (process.env.HOME ?? home), TMPDIR: asOther ? home : tmpdir(), TSX_DISABLE_CACHE: '1' };
  const { stdout } = await promisify(execFile)(command!, rest, { cwd: REPO, env });
  return JSON.parse(stdout) as Launched;
}

const runs = process.platform === 'linux' && existsSync(BWRAP) && existsSync(PERL);
const users: [string, boolean][] = [[root ? 'root' : 'this user', false]];
// As root, another user needs setpriv and user namespaces for users other than root.
if (root && existsSync(SETPRIV) && unprivilegedUserNamespaces) users.push(['a user other than root', true]);

describe.runIf(runs).each(users)('a contained server running as %s', (_name, asOther) => {
  let probes: Map<string, number>;
  let launched: Launched;

  beforeAll(async () => {
    launched = await launch(asOther, PERL, ['-e', PROBES]);
    probes = new Map(launched.stdout.trim().split('\n').map((line) => [line.split(' ')[0]!, Number(line.split(' ')[1])]));
  }, 60_000);

  it('runs as the intended user and the probes all ran', () => {
    if (asOther) expect(launched.uid).toBe(uid);
    expect(launched.exited).toEqual({ code: 0, signal: null });
    expect(launched.warnings).toEqual([]);
    expect([...probes.keys()]).toContain('socket-inet');
  });

  it('cannot write a sysctl, not even kernel.core_pattern back to its own value', () => {
    const error = probes.get('core_pattern');
    expect(error).not.toBe(0);
    // Read-only for root as well, where only the mount stops it (permission checks pass kuid 0).
    if (launched.uid === 0) expect(error).toBe(EROFS);
  });

  it('runs under a seccomp filter', () => {
    expect(probes.get('seccomp')).toBe(2);
  });

  it('cannot set a setuid or setgid bit, which a granted path would carry to the host, and sets any other mode', () => {
    // Octal: 0750, and none of 04000 or 02000 on the file the probes chmod.
    expect(probes.get('made-mode')).toBe(750);
  });

  it("cannot reach the sidecar's session keyring", () => {
    expect(probes.get('keyctl')).toBe(EPERM);
  });

  it.each<[string, number | undefined]>([
    ['tiocsti', EPERM],
    ['tiocsti-high-bits', EPERM],
    ['tioclinux', EPERM],
    ['perf_event_open', EPERM],
    ['io_uring_setup', ENOSYS],
    ['clone3', ENOSYS],
    ['unshare-user', EPERM],
    ['personality-32', EPERM],
    ['socket-vsock', EAFNOSUPPORT],
    ['personality-query', 0],
    ['socket-inet', 0],
    ['chmod-setuid', EPERM],
    ['chmod-setgid', EPERM],
    ['fchmod-setuid', EPERM],
    ['fchmodat2-setuid', EPERM],
    ['openat-setuid', EPERM],
    ['mknodat-setuid', EPERM],
    ['chmod-plain', 0],
  ])('%s gives errno %s', (probe, errno) => {
    expect(probes.get(probe)).toBe(errno);
  });

  it.runIf(process.arch === 'x64')('is killed by an x32 call instead of the filter reading its number as an x86_64 one', async () => {
    // x32's getpid: under the x86_64 table it would be number 39 with the x32 bit set.
    const result = await launch(asOther, PERL, ['-e', 'syscall(0x40000000 + 39); print "survived\\n"']);
    expect(result.stdout).toBe('');
    expect(result.exited.code).toBe(128 + constants.signals.SIGSYS);
  }, 60_000);

  it('still runs a node server: threads, child processes, /tmp and a loopback socket', async () => {
    const result = await launch(asOther, process.execPath, ['-e', STILL_WORKS], ['loopback']);
    expect(result).toMatchObject({ exited: { code: 0, signal: null }, stdout: 'ok pong\n', warnings: [] });
  }, 60_000);
});
