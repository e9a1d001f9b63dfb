/**
 * Linux backend: compiles an effective profile into bubblewrap arguments.
 *
 * The sandbox is built from nothing (bwrap's root is an empty tmpfs, remounted read-only at the
 * end with `--remount-ro /`), so anything not listed below does not exist inside:
 * - namespaces: `--unshare-all` (user, pid, net, ipc, uts, cgroup); `--share-net` only when the
 *   network is unconstrained or `internet-client` is granted. Sharing the host network namespace is
 *   the only way bubblewrap can give network access, and it also exposes the host's loopback
 *   services. `[]` and `loopback` both get a private network namespace whose loopback reaches only
 *   the sandbox itself: the host's `127.0.0.1` is not reachable;
 * - `--die-with-parent` (the tree ends with the sidecar), `--new-session` (no TIOCSTI into the
 *   sidecar's terminal), `--cap-drop ALL` (root inside the sandbox has no capabilities, so it
 *   cannot remount anything writable);
 * - read-only system dirs that exist (`/usr`, `/bin`, `/sbin`, `/lib*`; ones that are symlinks on
 *   the host, as with Debian's usrmerge, are recreated as the same symlinks) and the parts of
 *   `/etc` that name resolution, TLS, users, time zones and the dynamic loader need — never
 *   `/etc/shadow` or `/etc/ssl/private`;
 * - a fresh `--tmpfs /tmp`, `--proc /proc`, `--dev /dev`;
 * - read-only: the interpreter, the server's install dir and `cwd` (`launch-paths.ts`);
 * - the profile's grants, read-write or read-only, mounted shallowest first so a deeper grant
 *   overrides a shallower one exactly as `filesystem-grants.ts` defines. An implicit read-only
 *   path inside a grant is left to the grant (it must not make a writable grant read-only).
 * `$HOME` is never mounted. There is no `--clearenv`/`--setenv`: the backend spawns bwrap with
 * exactly {@link BubblewrapPolicyFields.env}, so environment values never appear in bwrap's argv.
 *
 * @module
 */
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { isWithin } from '../../trust/filesystem-grants.ts';
import type { BubblewrapPolicyFields } from '../containment-policy.ts';
import { containedEnvironment } from '../environment.ts';
import { launchPaths } from '../launch-paths.ts';
import type { CompileInput } from '../sandbox-backend.ts';

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

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

/** The system mounts, and the system dirs they cover, from one look at each directory. */
function systemMounts(): { args: string[]; dirs: string[] } {
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
  for (const entry of ETC_ENTRIES) if (existsSync(entry)) args.push('--ro-bind', entry, entry);
  return { args, dirs };
}

interface Mount {
  readonly flag: '--ro-bind' | '--bind';
  readonly source: string;
  readonly target: string;
}

/**
 * @param input The profile, the launch, the probed executable and the host facts.
 * @returns The policy fields the bubblewrap backend runs as `bwrap [...args, '--', file, ...launch.args]`.
 */
export function bubblewrapPolicy(input: CompileInput): BubblewrapPolicyFields {
  const { effective, launch } = input;
  const network = effective.networkCapabilities;
  const shareNet = network === undefined || network.includes('internet-client');
  const args = ['--unshare-all', ...(shareNet ? ['--share-net'] : []), '--die-with-parent', '--new-session', '--cap-drop', 'ALL'];
  const system = systemMounts();
  args.push(...system.args, '--tmpfs', '/tmp', '--proc', '/proc', '--dev', '/dev');

  const grants = effective.filesystemPaths;
  const implicit = launchPaths(launch, input.home);
  const covered = (path: string) => grants.some((g) => isWithin(path, g.targetPath)) || system.dirs.some((d) => isWithin(path, d));
  const mounts: Mount[] = [
    ...implicit.readOnly.filter((p) => !covered(p)).map((p): Mount => ({ flag: '--ro-bind', source: p, target: p })),
    ...grants.map((g): Mount => ({ flag: g.accessMode === 'read-write' ? '--bind' : '--ro-bind', source: g.sourcePath, target: g.targetPath })),
  ];
  const depth = (p: string) => (p === '/' ? 0 : p.split('/').length - 1);
  mounts.sort((a, b) => depth(a.target) - depth(b.target));
  for (const dir of implicit.emptyDirs) if (!covered(dir)) args.push('--dir', dir);
  for (const mount of mounts) args.push(mount.flag, mount.source, mount.target);

  const cwd = launch.cwd ?? '/tmp';
  args.push('--remount-ro', '/', '--chdir', cwd);
  return {
    backend: 'bubblewrap',
    executable: input.executable,
    args,
    env: containedEnvironment(effective.environment, launch.env, input.sidecarEnv),
    cwd,
    revision: input.revision,
  };
}
