import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import {
  AUDIT_ARCH_AARCH64,
  AUDIT_ARCH_X86_64,
  BPF_JEQ_K,
  BPF_JGE_K,
  BPF_JSET_K,
  BPF_LD_W_ABS,
  BPF_RET_K,
  DENIED_SYSCALLS,
  EAFNOSUPPORT,
  encodeProgram,
  ENOSYS,
  EPERM,
  SECCOMP_ARCHES,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  seccompFilter,
  seccompProgram,
} from './seccomp-filter.ts';

interface SeccompData {
  nr: number;
  arch: number;
  args?: bigint[];
}

/** `struct seccomp_data` as the kernel lays it out on a little-endian machine. */
function layout(data: SeccompData): DataView {
  const view = new DataView(new ArrayBuffer(64));
  view.setUint32(0, data.nr >>> 0, true);
  view.setUint32(4, data.arch >>> 0, true);
  view.setBigUint64(8, 0n, true);
  (data.args ?? []).forEach((arg, i) => view.setBigUint64(16 + 8 * i, BigInt.asUintN(64, arg), true));
  return view;
}

/**
 * Runs the encoded program (the bytes bwrap gets) the way the kernel's classic-BPF checker and
 * interpreter would, for the instructions the filter may use; anything else fails the test.
 */
function run(bytes: Uint8Array, data: SeccompData): number {
  expect(bytes.length % 8).toBe(0);
  const code = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = bytes.length / 8;
  expect(count).toBeGreaterThan(0);
  expect(count).toBeLessThanOrEqual(4096);
  const input = layout(data);
  let a = 0;
  for (let pc = 0, steps = 0; pc < count; pc++, steps++) {
    if (steps > count) throw new Error('Filter loops');
    const op = code.getUint16(pc * 8, true);
    const jt = code.getUint8(pc * 8 + 2);
    const jf = code.getUint8(pc * 8 + 3);
    const k = code.getUint32(pc * 8 + 4, true);
    const jump = (taken: boolean) => {
      const next = pc + 1 + (taken ? jt : jf);
      if (next >= count) throw new Error(`Jump past the end at ${pc}`);
      pc = next - 1;
    };
    switch (op) {
      case BPF_LD_W_ABS:
        if (k % 4 !== 0 || k + 4 > 64) throw new Error(`Misaligned or out-of-range load at ${pc}: ${k}`);
        a = input.getUint32(k, true);
        break;
      case BPF_JEQ_K:
        jump(a === k);
        break;
      case BPF_JGE_K:
        jump(a >= k);
        break;
      case BPF_JSET_K:
        jump((a & k) >>> 0 !== 0);
        break;
      case BPF_RET_K:
        return k;
      default:
        throw new Error(`Unexpected instruction ${op.toString(16)} at ${pc}`);
    }
  }
  throw new Error('Filter ran off its end');
}

const errno = (n: number) => SECCOMP_RET_ERRNO | n;

/** Syscall numbers as the kernel headers on this machine define them, when they are installed. */
function headerNumbers(path: string, pattern: RegExp): Map<string, number> | undefined {
  if (!existsSync(path)) return undefined;
  const numbers = new Map<string, number>();
  for (const match of readFileSync(path, 'utf8').matchAll(pattern)) numbers.set(match[1]!, Number(match[2]));
  return numbers;
}

const HEADERS: Record<string, Map<string, number> | undefined> = {
  x64: headerNumbers('/usr/include/x86_64-linux-gnu/asm/unistd_64.h', /^#define __NR_(\w+) (\d+)$/gm),
  arm64: headerNumbers('/usr/include/asm-generic/unistd.h', /^#define __NR(?:3264)?_(\w+) (\d+)$/gm),
};

describe.each(Object.entries(SECCOMP_ARCHES))('the seccomp filter for %s', (arch, table) => {
  const bytes = encodeProgram(seccompProgram(arch));
  const call = (name: string, args: bigint[] = []) => run(bytes, { nr: table.numbers[name]!, arch: table.audit, args });
  const read = arch === 'x64' ? 0 : 63;

  it.runIf(HEADERS[arch] !== undefined)('uses the numbers of the kernel headers', () => {
    const headers = HEADERS[arch]!;
    const newest = Math.max(...headers.values());
    for (const [name, number] of Object.entries(table.numbers)) {
      // A call newer than these headers (fchmodat2, Linux 6.6, under Debian 12's 6.1 headers) must come after all they name.
      if (!headers.has(name)) expect([name, number > newest]).toEqual([name, true]);
      else expect([name, headers.get(name)]).toEqual([name, number]);
    }
  });

  it('kills a call under another ABI than its own', () => {
    const other = table.audit === AUDIT_ARCH_X86_64 ? AUDIT_ARCH_AARCH64 : AUDIT_ARCH_X86_64;
    expect(run(bytes, { nr: read, arch: other })).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(run(bytes, { nr: read, arch: 0x40000003 })).toBe(SECCOMP_RET_KILL_PROCESS); // i386
  });

  it('allows what it does not name', () => {
    expect(run(bytes, { nr: read, arch: table.audit })).toBe(SECCOMP_RET_ALLOW);
  });

  it('denies every listed call with its errno, whatever the arguments', () => {
    for (const [name, code] of DENIED_SYSCALLS) {
      if (table.numbers[name] === undefined) continue;
      expect([name, call(name, [0xffffffffffffffffn, 1n])]).toEqual([name, errno(code)]);
    }
    expect(call('keyctl', [0n, BigInt.asUintN(64, -3n), 0n])).toBe(errno(EPERM));
    expect(call('clone3')).toBe(errno(ENOSYS));
    expect(call('io_uring_setup')).toBe(errno(ENOSYS));
  });

  it('denies TIOCSTI and TIOCLINUX on their low 32 bits, as the kernel reads the command', () => {
    expect(call('ioctl', [0n, 0x5412n])).toBe(errno(EPERM));
    expect(call('ioctl', [0n, 0x1_0000_5412n])).toBe(errno(EPERM));
    expect(call('ioctl', [0n, 0x541cn])).toBe(errno(EPERM));
    expect(call('ioctl', [0n, 0x5401n])).toBe(SECCOMP_RET_ALLOW); // TCGETS
    expect(call('ioctl', [0x5412n, 0x5413n])).toBe(SECCOMP_RET_ALLOW); // the fd is not the command
  });

  it('denies clone with CLONE_NEWUSER, allows threads and forks', () => {
    expect(call('clone', [0x10000000n | 17n])).toBe(errno(EPERM));
    expect(call('clone', [0x3d0f00n])).toBe(SECCOMP_RET_ALLOW); // pthread_create's flags
    expect(call('clone', [0x1200011n])).toBe(SECCOMP_RET_ALLOW); // fork's
  });

  it('allows personality PER_LINUX and the query, nothing else', () => {
    expect(call('personality', [0n])).toBe(SECCOMP_RET_ALLOW);
    expect(call('personality', [0xffffffffn])).toBe(SECCOMP_RET_ALLOW);
    expect(call('personality', [8n])).toBe(errno(EPERM)); // PER_LINUX32
    expect(call('personality', [0x0040000n])).toBe(errno(EPERM)); // ADDR_NO_RANDOMIZE
  });

  it('allows sockets of the unix, inet and netlink families only', () => {
    for (const family of [0n, 1n, 2n, 10n, 16n]) expect(call('socket', [family, 1n, 0n])).toBe(SECCOMP_RET_ALLOW);
    for (const family of [17n, 38n, 40n, 44n]) expect(call('socket', [family, 1n, 0n])).toBe(errno(EAFNOSUPPORT)); // packet, alg, vsock, xdp
    expect(call('socket', [0x1_0000_0028n, 1n, 0n])).toBe(errno(EAFNOSUPPORT)); // vsock, high bits set
  });

  it('denies a setuid or setgid bit by any chmod, and a file created with one; allows every other mode', () => {
    const AT_FDCWD = BigInt.asUintN(64, -100n);
    const has = (name: string) => table.numbers[name] !== undefined;
    for (const mode of [0o4755n, 0o2755n, 0o6755n, 0o4000n, 0o1_0000_4755n]) {
      for (const name of ['chmod', 'fchmod', 'creat'].filter(has)) expect([name, mode, call(name, [3n, mode])]).toEqual([name, mode, errno(EPERM)]);
      for (const name of ['fchmodat', 'fchmodat2'].filter(has)) expect([name, mode, call(name, [AT_FDCWD, 0n, mode, 0n])]).toEqual([name, mode, errno(EPERM)]);
      expect(call('mknodat', [AT_FDCWD, 0n, 0o100000n | mode, 0n])).toBe(errno(EPERM));
      expect(call('openat', [AT_FDCWD, 0n, 0o101n, mode])).toBe(errno(EPERM)); // O_CREAT | O_WRONLY
      expect(call('openat', [AT_FDCWD, 0n, 0o20200002n, mode])).toBe(errno(EPERM)); // O_TMPFILE | O_RDWR
      if (has('open')) expect(call('open', [0n, 0o1101n, mode])).toBe(errno(EPERM));
    }
    for (const mode of [0o755n, 0o1777n, 0o644n, 0n]) {
      for (const name of ['chmod', 'fchmod', 'creat'].filter(has)) expect(call(name, [3n, mode])).toBe(SECCOMP_RET_ALLOW);
      for (const name of ['fchmodat', 'fchmodat2'].filter(has)) expect(call(name, [AT_FDCWD, 0n, mode, 0n])).toBe(SECCOMP_RET_ALLOW);
      expect(call('openat', [AT_FDCWD, 0n, 0o101n, mode])).toBe(SECCOMP_RET_ALLOW);
    }
    // Without O_CREAT the mode argument is not read (whatever a caller left in it).
    expect(call('openat', [AT_FDCWD, 0n, 0o2n, 0o4755n])).toBe(SECCOMP_RET_ALLOW);
    if (has('open')) expect(call('open', [0n, 0n, 0o4755n])).toBe(SECCOMP_RET_ALLOW);
    expect(call('openat2')).toBe(errno(ENOSYS));
  });

  // Only x86_64 has an x32 ABI (numbers with bit 30 set under the same audit arch); arm64 has none to test.
  if (table.x32) {
    it('kills x32 calls, lets -1 through to the kernel', () => {
      expect(run(bytes, { nr: 0x40000000 | table.numbers.keyctl!, arch: table.audit })).toBe(SECCOMP_RET_KILL_PROCESS);
      expect(run(bytes, { nr: 0x40000000, arch: table.audit })).toBe(SECCOMP_RET_KILL_PROCESS);
      expect(run(bytes, { nr: -1, arch: table.audit })).toBe(SECCOMP_RET_ALLOW);
    });
  }
});

describe('seccompFilter', () => {
  it('is this machine’s program, or refuses containment on an architecture with no table', () => {
    if (Object.hasOwn(SECCOMP_ARCHES, process.arch)) expect(seccompFilter()).toEqual(encodeProgram(seccompProgram(process.arch)));
    else expect(() => seccompFilter()).toThrow(WireError);
    const error = (() => {
      try {
        seccompProgram('riscv64');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'containment-unavailable', detail: { arch: 'riscv64' } });
  });

  it('encodes struct sock_filter little-endian, 8 bytes each', () => {
    expect([...encodeProgram([{ code: BPF_RET_K, jt: 1, jf: 2, k: SECCOMP_RET_ALLOW }])]).toEqual([0x06, 0, 1, 2, 0x00, 0x00, 0xff, 0x7f]);
  });
});
