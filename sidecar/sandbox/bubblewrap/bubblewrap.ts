/**
 * Linux backend: compiles an effective profile into bubblewrap arguments.
 *
 * The sandbox is built from nothing (bwrap's root is an empty tmpfs, remounted read-only at the
 * end with `--remount-ro /`), so anything not listed below does not exist inside:
 * - namespaces: `--unshare-all` (user, pid, net, ipc, uts, cgroup) and always its own network
 *   namespace, so neither the host's loopback services nor its abstract Unix sockets (X11,
 *   D-Bus, systemd) are reachable (`ContainedNetwork`): `none` and `loopback` have only a private
 *   loopback, `internet-client` adds user-mode networking (`user-mode-network.ts`, slirp4netns,
 *   with an `/etc/resolv.conf` naming its DNS relay). A profile that grants paths and says
 *   nothing of the network has none;
 * - `--unshare-user --disable-userns`: the sandbox cannot create user namespaces of its own (the
 *   door to most kernel attack surface a process without capabilities has);
 * - `--die-with-parent` (the tree ends with the sidecar), `--new-session` (no TIOCSTI into the
 *   sidecar's terminal), `--cap-drop ALL` (root inside the sandbox has no capabilities, so it
 *   cannot remount anything writable);
 * - read-only system dirs that exist (`/usr`, `/bin`, `/sbin`, `/lib*`; ones that are symlinks on
 *   the host, as with Debian's usrmerge, are recreated as the same symlinks) and the parts of
 *   `/etc` that name resolution, TLS, users, time zones and the dynamic loader need — never
 *   `/etc/shadow` or `/etc/ssl/private`;
 * - a fresh `/tmp` and `/dev/shm`, each a tmpfs capped at `tmpSizeBytes` (`--size`) so a server
 *   cannot fill the host's memory through them; `--proc /proc` with `/proc/sys` and the other
 *   kernel knobs read-only ({@link PROC_READ_ONLY}); `--dev /dev`, read-only;
 * - a seccomp filter, which the backend adds to every launch (`seccomp-filter.ts`);
 * - read-only: the interpreter, the server's install dir and `cwd` (`launch-paths.ts`); none of
 *   them may expose the sidecar's config dir (`config-dir-exposure.ts`, checked by the compiler).
 *   Each is mounted from a descriptor opened at launch like a grant's (`grant-descriptors.ts`), so
 *   a root that another profile's server can write (a shared install dir) and swaps for a symlink
 *   after that check refuses the launch instead of mounting the symlink's target. A root that is
 *   not its own real path is refused here already, as a grant is: whoever can change a symlink on
 *   the way would choose what the sandbox shows, so the server config must name real paths;
 * - the profile's grants, read-write or read-only, mounted shallowest first so a deeper grant
 *   overrides a shallower one exactly as `filesystem-grants.ts` defines, each from a descriptor
 *   the backend opens at launch (`grant-descriptors.ts`: a symlink swapped in cannot redirect
 *   it; a source that is not its own real path is refused here already). An implicit read-only
 *   path inside a grant is left to the grant (it must not make a writable grant read-only). A
 *   grant that would bring in the host's procfs, or a writable sysfs or cgroupfs, is refused
 *   ({@link NEVER_GRANTED}): it would undo the read-only `/proc/sys` above, and worse.
 * `$HOME` is never mounted. The environment ({@link BubblewrapPolicyFields.env}) is not in these
 * args: the backend passes it as `--clearenv` and `--setenv` read from a descriptor, so its values
 * never appear in bwrap's argv, and bwrap itself runs on the host with none.
 *
 * @module
 */
import { existsSync, lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { WireError } from '../../../shared/errors.ts';
import { containedNetwork, type FilesystemGrant } from '../../trust/effective-profile.ts';
import { isWithin } from '../../trust/filesystem-grants.ts';
import type { BubblewrapPolicyFields } from '../containment-policy.ts';
import { containedEnvironment } from '../environment.ts';
import { launchPaths } from '../launch-paths.ts';
import type { CompileInput } from '../sandbox-backend.ts';
import { descriptorLayout } from './bubblewrap-descriptors.ts';
import { openGrantSources } from './grant-descriptors.ts';
import { userModeNetworkProbe } from './user-mode-network.ts';

export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Read-only parts of `/etc`; each is mounted only if it exists on the host. */
export const ETC_ENTRIES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/nsswitch.conf',
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust/extracted',
  '/etc/passwd',
  '/etc/group',
  '/etc/localtime',
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
];

/**
 * Read-only over the sandbox's `/proc`, right after it is mounted. A sidecar running as root maps
 * the server to kuid 0, and sysctl writes are checked against that uid, not against capabilities,
 * so `--cap-drop ALL` leaves `/proc/sys/kernel/core_pattern` (host root code execution) writable.
 * bwrap covers `/proc/sys` only when `access(W_OK)` on it succeeds, which it never does on the
 * directory. `/proc/sys` must exist (a bwrap failure, not a silent gap); the others, Docker's
 * read-only `/proc` paths, are there only with their kernel options.
 */
export const PROC_READ_ONLY = [
  '--ro-bind', '/proc/sys', '/proc/sys',
  ...['/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs'].flatMap((path) => ['--ro-bind-try', path, path]),
];

/**
 * Kernel filesystems a grant must not bring in. The host's procfs not at all: writable, its
 * `/proc/sys` is writable again for a server mapped to root (checked: `core_pattern` accepts a
 * write); read-only, it still undoes the PID namespace, listing every host process with its
 * command line, where tokens often are. The others not writable: sysfs, cgroupfs and the like
 * check writes by uid too, so a server mapped to root could write them.
 */
const NEVER_GRANTED = new Set(['proc']);
const NEVER_WRITABLE = new Set(['sysfs', 'cgroup', 'cgroup2', 'debugfs', 'tracefs', 'securityfs', 'bpf', 'configfs', 'efivarfs', 'pstore', 'binfmt_misc']);

/** Mount points of the host's kernel filesystems, with the type of each. */
function kernelMounts(): { path: string; type: string }[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [{ path: '/proc', type: 'proc' }, { path: '/sys', type: 'sysfs' }];
  }
  return text.split('\n').flatMap((line) => {
    const [before, after] = line.split(' - ');
    const type = after?.split(' ')[0] ?? '';
    const point = before?.split(' ')[4];
    if (point === undefined || (!NEVER_GRANTED.has(type) && !NEVER_WRITABLE.has(type))) return [];
    return [{ path: point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))), type }];
  });
}

/** Refuses a grant whose source is, holds or lies in a kernel filesystem it must not expose. */
function refuseKernelFilesystems(grants: readonly FilesystemGrant[], log: CompileInput['log']): void {
  const mounts = kernelMounts();
  for (const grant of grants) {
    const hit = mounts.find((m) => (isWithin(grant.sourcePath, m.path) || isWithin(m.path, grant.sourcePath)) && (NEVER_GRANTED.has(m.type) || grant.accessMode === 'read-write'));
    if (hit === undefined) continue;
    log.warn('Refused a trust profile grant that exposes a host kernel filesystem', { path: grant.sourcePath, mount: hit.path, type: hit.type });
    throw new WireError('launch-failed', `Cannot start contained process: a path its trust profile grants exposes the host's ${hit.type} filesystem; the sidecar log names it`, {
      detail: { backend: 'bubblewrap' },
    });
  }
}

/** The system mounts, and the system dirs they cover, from one look at each directory. */
function systemMounts(resolvConfFd: number | undefined): { args: string[]; dirs: string[] } {
  const args: string[] = [];
  const dirs: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    let stat;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (stat.isDirectory()) args.push('--ro-bind', dir, dir);
    else continue;
    dirs.push(dir);
  }
  for (const entry of ETC_ENTRIES) {
    if (entry === '/etc/resolv.conf' && resolvConfFd !== undefined) args.push('--ro-bind-data', String(resolvConfFd), entry);
    else if (existsSync(entry)) args.push('--ro-bind', entry, entry);
  }
  return { args, dirs };
}

/** Opens the sources as a launch will (`grant-descriptors.ts`), so a bad one fails the compile, not a later launch of a cached policy. */
function refuseUnlessOwnPaths(grants: readonly string[], launchRoots: readonly string[], log: CompileInput['log'], refusal: string): void {
  try {
    openGrantSources(grants, launchRoots).close();
  } catch (error) {
    log.warn(refusal, { cause: (error as Error).cause ?? null });
    throw error;
  }
}

interface Mount {
  readonly flag: '--ro-bind-fd' | '--bind-fd';
  /** The descriptor bwrap will hold the source as. */
  readonly source: string;
  readonly target: string;
}

/**
 * @param input The profile, the launch, the probed executable and the host facts.
 * @returns The policy fields the bubblewrap backend runs as `bwrap [...args, '--', file, ...launch.args]`.
 * @throws WireError `containment-unavailable` when `internet-client` is granted and slirp4netns is
 *   missing; `launch-failed` when a grant's source or a launch root is missing or not its own real
 *   path, or a grant would bring in a host kernel filesystem ({@link NEVER_GRANTED}).
 */
export async function bubblewrapPolicy(input: CompileInput): Promise<BubblewrapPolicyFields> {
  const { effective, launch } = input;
  const network = containedNetwork(effective);
  let userModeNetwork: string | undefined;
  if (network === 'internet-client') {
    const helper = await (input.networkProbe ?? userModeNetworkProbe())();
    if (!helper.available) throw new WireError('containment-unavailable', helper.message, { detail: { backend: 'bubblewrap', package: 'slirp4netns' } });
    userModeNetwork = helper.executable;
  }
  const layout = descriptorLayout(network);
  const size = String(input.tmpSizeBytes);
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--cap-drop', 'ALL'];
  const system = systemMounts(layout.resolvConf);
  args.push(...system.args, '--size', size, '--tmpfs', '/tmp', '--proc', '/proc', ...PROC_READ_ONLY, '--dev', '/dev', '--size', size, '--tmpfs', '/dev/shm');

  const grants = effective.filesystemPaths;
  refuseKernelFilesystems(grants, input.log);
  // The grants before launchPaths, which trusts them; the roots after. Both again at each launch (the backend's wrap).
  refuseUnlessOwnPaths(grants.map((g) => g.sourcePath), [], input.log, 'Refused a trust profile grant');
  const implicit = launchPaths(launch, input.home, grants);
  const covered = (path: string) => grants.some((g) => isWithin(path, g.targetPath)) || system.dirs.some((d) => isWithin(path, d));
  const launchRoots = implicit.readOnly.filter((p) => !covered(p));
  refuseUnlessOwnPaths([], launchRoots, input.log, 'Refused a launch root');
  const mounts: Mount[] = [
    ...launchRoots.map((p, i): Mount => ({ flag: '--ro-bind-fd', source: String(layout.launchRoot(grants.length, i)), target: p })),
    ...grants.map((g, i): Mount => ({ flag: g.accessMode === 'read-write' ? '--bind-fd' : '--ro-bind-fd', source: String(layout.grant(i)), target: g.targetPath })),
  ];
  const depth = (p: string) => (p === '/' ? 0 : p.split('/').length - 1);
  mounts.sort((a, b) => depth(a.target) - depth(b.target));
  for (const dir of implicit.emptyDirs) if (!covered(dir)) args.push('--dir', dir);
  for (const mount of mounts) args.push(mount.flag, mount.source, mount.target);

  const cwd = launch.cwd ?? '/tmp';
  args.push('--remount-ro', '/dev', '--remount-ro', '/', '--chdir', cwd);
  return {
    backend: 'bubblewrap',
    executable: input.executable,
    args,
    grantSources: grants.map((g) => g.sourcePath),
    launchRoots,
    network,
    ...(userModeNetwork !== undefined ? { userModeNetwork } : {}),
    env: containedEnvironment(effective.environment, launch.env, input.sidecarEnv),
    cwd,
    revision: input.revision,
  };
}
