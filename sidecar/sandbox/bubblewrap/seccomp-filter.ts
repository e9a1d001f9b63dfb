/**
 * The seccomp filter every bubblewrap sandbox runs under (`bwrap --seccomp FD`), as the classic
 * BPF program the kernel takes. Node cannot load a filter itself, and libseccomp would be a
 * native dependency, so the program is assembled here and bwrap installs it right before it
 * runs the command (after its own setup, so the filter need not allow bwrap's mounts).
 *
 * It is a deny list modelled on Flatpak's (`flatpak-run.c` `setup_seccomp`, itself from
 * linux-user-chroot and Sandstorm): everything else is allowed, so ordinary servers (node,
 * python, the npm MCP servers) run unchanged. Denied, with the errno a kernel without the call
 * or without the permission gives, so programs take their usual fallback:
 * - the kernel keyrings (`add_key`, `keyctl`, `request_key`): keyrings are not namespaced, so the
 *   sidecar's session keyring (and through it the user's) was readable and writable from inside;
 * - terminal injection (`ioctl` TIOCSTI, TIOCLINUX), on the low 32 bits only, as the kernel reads
 *   the command (a high bit set must not slip past: CVE-2019-10063);
 * - kernel attack surface no server needs: `perf_event_open`, `bpf`, `userfaultfd`, `io_uring_*`
 *   (whose requests would also bypass the socket check below), `kexec_*`, module loading,
 *   `syslog`, `acct`, `quotactl*`, `uselib`, `modify_ldt`, the NUMA calls, `ptrace`;
 * - namespaces and mounts: `unshare`, `setns`, `clone` with CLONE_NEWUSER, `mount`, `umount2`,
 *   `pivot_root`, `chroot`, and the new mount API with ENOSYS (`--disable-userns` and
 *   `--cap-drop ALL` already refuse these; the filter holds if either is ever missing);
 * - `clone3` with ENOSYS: its flags sit behind a pointer BPF cannot read, and ENOSYS makes glibc
 *   fall back to `clone`, whose flags the filter checks;
 * - `personality` other than PER_LINUX or the query 0xffffffff (no BSD or 32-bit emulation);
 * - `socket` outside AF_UNSPEC, AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, with EAFNOSUPPORT:
 *   AF_VSOCK, for one, is not network-namespaced and would reach the hypervisor's services from a
 *   sandbox with no network at all;
 * - a setuid or setgid bit, by `chmod` and its kin, or by creating a file with one (`open`,
 *   `openat`, `creat`, `mknod*` with O_CREAT or O_TMPFILE): granted paths are `nosuid` only
 *   inside the sandbox, so a server could leave on the host a program that runs as the sidecar's
 *   user (root, for a root sidecar) for any local user who runs it. `openat2` holds its mode
 *   behind a pointer and gets ENOSYS, on which callers fall back to `openat`.
 *
 * The syscall numbers are per architecture. A call made under another ABI than the one the table
 * was built for (i386 or x32 on x86_64, AArch32 on arm64) kills the process: its numbers mean
 * other calls, and libseccomp (so Flatpak) does the same by default. A sidecar on an architecture
 * with no table refuses contained launches rather than run them unfiltered.
 *
 * @module
 */
import { endianness } from 'node:os';
import { WireError } from '../../../shared/errors.ts';

/** One `struct sock_filter`. */
export interface BpfInstruction {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

export const BPF_LD_W_ABS = 0x20;
export const BPF_JEQ_K = 0x15;
export const BPF_JGE_K = 0x35;
export const BPF_JSET_K = 0x45;
export const BPF_RET_K = 0x06;

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;

export const AUDIT_ARCH_X86_64 = 0xc000003e;
export const AUDIT_ARCH_AARCH64 = 0xc00000b7;

/** x32 calls arrive with AUDIT_ARCH_X86_64 and this bit set in the number. */
export const X32_SYSCALL_BIT = 0x40000000;

export const EPERM = 1;
export const ENOSYS = 38;
export const EAFNOSUPPORT = 97;

const S_ISUID_OR_ISGID = 0o6000;
/** O_CREAT, and O_TMPFILE's own bit: the flags under which `open`'s mode argument is read. */
const O_CREAT_OR_TMPFILE = 0o100 | 0o20000000;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
const CLONE_NEWUSER = 0x10000000;
const PER_LINUX = 0;
const PERSONALITY_QUERY = 0xffffffff;
/** AF_UNSPEC, AF_UNIX, AF_INET, AF_INET6, AF_NETLINK. */
export const ALLOWED_SOCKET_FAMILIES = [0, 1, 2, 10, 16] as const;

/** `struct seccomp_data`: nr, arch, instruction_pointer, then six 64-bit args. */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
/** The low half of argument `i`, on a little-endian machine (the only kind with a table). */
const argLow = (i: number) => 16 + 8 * i;

/** Calls denied whatever their arguments, with the errno each gets. */
export const DENIED_SYSCALLS: readonly (readonly [name: string, errno: number])[] = [
  ['syslog', EPERM],
  ['uselib', EPERM],
  ['acct', EPERM],
  ['modify_ldt', EPERM],
  ['quotactl', EPERM],
  ['quotactl_fd', EPERM],
  ['add_key', EPERM],
  ['keyctl', EPERM],
  ['request_key', EPERM],
  ['move_pages', EPERM],
  ['mbind', EPERM],
  ['get_mempolicy', EPERM],
  ['set_mempolicy', EPERM],
  ['set_mempolicy_home_node', EPERM],
  ['migrate_pages', EPERM],
  ['unshare', EPERM],
  ['setns', EPERM],
  ['mount', EPERM],
  ['umount2', EPERM],
  ['pivot_root', EPERM],
  ['chroot', EPERM],
  ['perf_event_open', EPERM],
  ['bpf', EPERM],
  ['userfaultfd', EPERM],
  ['ptrace', EPERM],
  ['kexec_load', EPERM],
  ['kexec_file_load', EPERM],
  ['init_module', EPERM],
  ['finit_module', EPERM],
  ['delete_module', EPERM],
  ['clone3', ENOSYS],
  ['open_tree', ENOSYS],
  ['move_mount', ENOSYS],
  ['fsopen', ENOSYS],
  ['fsconfig', ENOSYS],
  ['fsmount', ENOSYS],
  ['fspick', ENOSYS],
  ['mount_setattr', ENOSYS],
  // ENOSYS, as on a kernel built without io_uring: libuv and others then use plain syscalls.
  ['io_uring_setup', ENOSYS],
  ['io_uring_enter', ENOSYS],
  ['io_uring_register', ENOSYS],
  ['openat2', ENOSYS],
];

/** Calls whose arguments decide, each with the label of its check. */
const CHECKED: readonly (readonly [name: string, check: string])[] = [
  ['ioctl', 'ioctl'],
  ['clone', 'clone'],
  ['personality', 'personality'],
  ['socket', 'socket'],
  ['chmod', 'mode-in-1'],
  ['fchmod', 'mode-in-1'],
  ['creat', 'mode-in-1'],
  ['mknod', 'mode-in-1'],
  ['fchmodat', 'mode-in-2'],
  ['fchmodat2', 'mode-in-2'],
  ['mknodat', 'mode-in-2'],
  ['open', 'open'],
  ['openat', 'openat'],
];

export interface SeccompArch {
  readonly audit: number;
  /** Whether x32 numbers (with {@link X32_SYSCALL_BIT}) can arrive under `audit`. */
  readonly x32: boolean;
  /** Syscall numbers; a call the architecture lacks (uselib on arm64) is left out. */
  readonly numbers: Readonly<Record<string, number>>;
}

/** From the kernel's `unistd_64.h` (x86_64) and `asm-generic/unistd.h` (arm64). */
export const SECCOMP_ARCHES: Readonly<Record<string, SeccompArch>> = {
  x64: {
    audit: AUDIT_ARCH_X86_64,
    x32: true,
    numbers: {
      ioctl: 16, socket: 41, clone: 56, ptrace: 101, syslog: 103, uselib: 134, personality: 135, modify_ldt: 154, pivot_root: 155,
      chroot: 161, acct: 163, mount: 165, umount2: 166, init_module: 175, delete_module: 176, quotactl: 179, mbind: 237,
      set_mempolicy: 238, get_mempolicy: 239, kexec_load: 246, add_key: 248, request_key: 249, keyctl: 250, migrate_pages: 256,
      unshare: 272, move_pages: 279, perf_event_open: 298, setns: 308, finit_module: 313, kexec_file_load: 320, bpf: 321,
      userfaultfd: 323, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, open_tree: 428, move_mount: 429,
      fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, clone3: 435, mount_setattr: 442, quotactl_fd: 443,
      set_mempolicy_home_node: 450, open: 2, creat: 85, chmod: 90, fchmod: 91, mknod: 133, openat: 257, mknodat: 259,
      fchmodat: 268, openat2: 437, fchmodat2: 452,
    },
  },
  arm64: {
    audit: AUDIT_ARCH_AARCH64,
    x32: false,
    numbers: {
      ioctl: 29, umount2: 39, mount: 40, pivot_root: 41, chroot: 51, quotactl: 60, acct: 89, personality: 92, unshare: 97,
      kexec_load: 104, init_module: 105, delete_module: 106, syslog: 116, ptrace: 117, socket: 198, add_key: 217,
      request_key: 218, keyctl: 219, clone: 220, mbind: 235, get_mempolicy: 236, set_mempolicy: 237, migrate_pages: 238,
      move_pages: 239, perf_event_open: 241, setns: 268, finit_module: 273, bpf: 280, userfaultfd: 282, kexec_file_load: 294,
      io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, open_tree: 428, move_mount: 429, fsopen: 430,
      fsconfig: 431, fsmount: 432, fspick: 433, clone3: 435, mount_setattr: 442, quotactl_fd: 443, set_mempolicy_home_node: 450,
      mknodat: 33, fchmod: 52, fchmodat: 53, openat: 56, openat2: 437, fchmodat2: 452,
    },
  },
};

const errno = (n: number) => SECCOMP_RET_ERRNO | n;

/** An instruction whose jumps name labels, resolved once the program's length is known. */
type Pending = { code: number; k: number; jt?: string; jf?: string } | { label: string };

/** Assembles forward jumps to labels into `sock_filter` offsets (each at most 255 ahead). */
function assemble(source: readonly Pending[]): BpfInstruction[] {
  const at = new Map<string, number>();
  let pc = 0;
  for (const item of source) {
    if ('label' in item) at.set(item.label, pc);
    else pc++;
  }
  const program: BpfInstruction[] = [];
  const offset = (label: string | undefined, from: number): number => {
    if (label === undefined) return 0;
    const target = at.get(label);
    if (target === undefined) throw new Error(`Seccomp filter jumps to an unknown label: ${label}`);
    const distance = target - from - 1;
    if (distance < 0 || distance > 255) throw new Error(`Seccomp filter jump out of range: ${label} is ${distance} ahead`);
    return distance;
  };
  for (const item of source) {
    if ('label' in item) continue;
    const index = program.length;
    program.push({ code: item.code, jt: offset(item.jt, index), jf: offset(item.jf, index), k: item.k >>> 0 });
  }
  return program;
}

/**
 * @param arch A Node `process.arch` name.
 * @returns The filter's instructions for that architecture.
 * @throws WireError `containment-unavailable` when there is no table for `arch` or the machine is big-endian.
 */
export function seccompProgram(arch: string = process.arch): BpfInstruction[] {
  const table = Object.hasOwn(SECCOMP_ARCHES, arch) ? SECCOMP_ARCHES[arch] : undefined;
  if (table === undefined || endianness() !== 'LE') {
    throw new WireError('containment-unavailable', `Containment unavailable: no seccomp filter for this architecture: ${arch} (${endianness()})`, {
      detail: { backend: 'bubblewrap', arch },
    });
  }
  const nr = (name: string) => table.numbers[name];
  const results = new Map<number, string>();
  const ret = (value: number) => {
    const label = `ret-${value.toString(16)}`;
    results.set(value, label);
    return label;
  };
  const ALLOW = ret(SECCOMP_RET_ALLOW);
  const KILL = ret(SECCOMP_RET_KILL_PROCESS);
  const DENY = ret(errno(EPERM));

  const source: Pending[] = [
    { code: BPF_LD_W_ABS, k: ARCH_OFFSET },
    { code: BPF_JEQ_K, k: table.audit, jf: KILL },
    { code: BPF_LD_W_ABS, k: NR_OFFSET },
  ];
  if (table.x32) {
    // -1 is what a tracer sets to skip a call; the kernel answers it with ENOSYS itself.
    source.push({ code: BPF_JGE_K, k: X32_SYSCALL_BIT, jf: 'dispatch' }, { code: BPF_JEQ_K, k: 0xffffffff, jt: ALLOW, jf: KILL }, { label: 'dispatch' });
  }
  for (const [name, code] of DENIED_SYSCALLS) {
    const number = nr(name);
    if (number !== undefined) source.push({ code: BPF_JEQ_K, k: number, jt: ret(errno(code)) });
  }
  const checks = new Set<string>();
  for (const [name, check] of CHECKED) {
    const number = nr(name);
    if (number === undefined) continue;
    source.push({ code: BPF_JEQ_K, k: number, jt: check });
    checks.add(check);
  }
  source.push({ code: BPF_RET_K, k: SECCOMP_RET_ALLOW });

  source.push(
    { label: 'ioctl' },
    { code: BPF_LD_W_ABS, k: argLow(1) },
    { code: BPF_JEQ_K, k: TIOCSTI, jt: DENY },
    { code: BPF_JEQ_K, k: TIOCLINUX, jt: DENY, jf: ALLOW },
    // The kernel takes clone's flags from their low 32 bits (kernel/fork.c), so only those count.
    { label: 'clone' },
    { code: BPF_LD_W_ABS, k: argLow(0) },
    { code: BPF_JSET_K, k: CLONE_NEWUSER, jt: DENY, jf: ALLOW },
    { label: 'personality' },
    { code: BPF_LD_W_ABS, k: argLow(0) },
    { code: BPF_JEQ_K, k: PER_LINUX, jt: ALLOW },
    { code: BPF_JEQ_K, k: PERSONALITY_QUERY, jt: ALLOW, jf: DENY },
    { label: 'socket' },
    { code: BPF_LD_W_ABS, k: argLow(0) },
    ...ALLOWED_SOCKET_FAMILIES.map((family): Pending => ({ code: BPF_JEQ_K, k: family, jt: ALLOW })),
    { code: BPF_RET_K, k: errno(EAFNOSUPPORT) },
  );
  // A mode argument with a setuid or setgid bit; `open`'s only when it creates (its mode is read then alone).
  const modeCheck = (label: string, flags: number | null, mode: number): Pending[] => [
    { label },
    ...(flags === null ? [] : [{ code: BPF_LD_W_ABS, k: argLow(flags) }, { code: BPF_JSET_K, k: O_CREAT_OR_TMPFILE, jf: ALLOW }]),
    { code: BPF_LD_W_ABS, k: argLow(mode) },
    { code: BPF_JSET_K, k: S_ISUID_OR_ISGID, jt: DENY, jf: ALLOW },
  ];
  if (checks.has('mode-in-1')) source.push(...modeCheck('mode-in-1', null, 1));
  if (checks.has('mode-in-2')) source.push(...modeCheck('mode-in-2', null, 2));
  if (checks.has('open')) source.push(...modeCheck('open', 1, 2));
  if (checks.has('openat')) source.push(...modeCheck('openat', 2, 3));
  for (const [value, label] of results) source.push({ label }, { code: BPF_RET_K, k: value });
  return assemble(source);
}

/** The program as the bytes of a `struct sock_filter` array, which bwrap reads from its `--seccomp` fd. */
export function encodeProgram(program: readonly BpfInstruction[]): Uint8Array {
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  program.forEach((insn, i) => {
    view.setUint16(i * 8, insn.code, true);
    view.setUint8(i * 8 + 2, insn.jt);
    view.setUint8(i * 8 + 3, insn.jf);
    view.setUint32(i * 8 + 4, insn.k, true);
  });
  return bytes;
}

let cached: Uint8Array | undefined;

/**
 * @returns This machine's filter, encoded for bwrap.
 * @throws WireError `containment-unavailable` on an architecture with no table.
 */
export function seccompFilter(): Uint8Array {
  cached ??= encodeProgram(seccompProgram());
  return cached;
}
