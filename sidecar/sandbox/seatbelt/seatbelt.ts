/**
 * macOS backend: compiles an effective profile into a Seatbelt (SBPL) profile for
 * `sandbox-exec -p <profile> <command> …`. Generated and tested as text; it runs only on macOS.
 *
 * The profile starts from `(deny default)` and allows: process fork/exec and signals within the
 * sandbox, a few system services (user/group lookup, notifications, logging, trust evaluation),
 * metadata lookups everywhere (path traversal needs them; contents stay denied), reading the
 * system (`/usr`, `/bin`, `/sbin`, `/System`, `/Library/Apple`, `/private/etc`, time zones), the
 * launch paths of `launch-paths.ts`, and the grants: each grant allows reading its subtree and
 * allows or denies writing it, emitted shallowest first because later SBPL rules take precedence,
 * which reproduces "the deepest grant wins".
 *
 * Seatbelt cannot do everything bubblewrap does, and what it cannot enforce fails closed with
 * `containment-unavailable`:
 * - `loopback`: Seatbelt has no private network namespace; allowing localhost would expose the
 *   host's loopback services, which `loopback` promises not to do. Use `[]` or `internet-client`
 *   (outbound connections except to localhost; a profile that says nothing of the network gets none);
 * - a grant whose `target-path` differs from its `source-path`: Seatbelt filters paths, it cannot
 *   remap them.
 * There is no private `/tmp`: a server that needs scratch space needs a read-write grant.
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import { containedNetwork, type EffectiveProfile } from '../../trust/effective-profile.ts';
import type { SeatbeltPolicyFields } from '../containment-policy.ts';
import { containedEnvironment } from '../environment.ts';
import { launchPaths } from '../launch-paths.ts';
import type { CompileInput } from '../sandbox-backend.ts';

export const SYSTEM_READ = ['/usr', '/bin', '/sbin', '/System', '/Library/Apple', '/private/etc', '/private/var/db/timezone'];
const SERVICES = [
  'com.apple.system.opendirectoryd.libinfo',
  'com.apple.system.notification_center',
  'com.apple.system.logger',
  'com.apple.logd',
  'com.apple.trustd.agent',
];

/** An SBPL string literal: backslashes and double quotes escaped. */
export function sbplString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function subpaths(paths: readonly string[]): string {
  return paths.map((p) => `(subpath ${sbplString(p)})`).join(' ');
}

export interface SeatbeltProfileInput {
  readonly effective: EffectiveProfile;
  readonly readPaths: readonly string[];
  readonly revision: string;
}

/**
 * @param input The effective profile, the extra read-only paths and the revision (for the header).
 * @returns The SBPL profile text.
 * @throws WireError `containment-unavailable` for what Seatbelt cannot enforce.
 */
export function seatbeltProfile(input: SeatbeltProfileInput): string {
  const { effective } = input;
  const network = effective.networkCapabilities;
  if (network !== undefined && network.includes('loopback')) {
    throw new WireError(
      'containment-unavailable',
      'Containment unavailable: Seatbelt cannot enforce the "loopback" network capability: macOS has no private loopback and allowing localhost would expose host services; use [] or "internet-client"',
    );
  }
  const remapped = effective.filesystemPaths.find((g) => g.sourcePath !== g.targetPath);
  if (remapped !== undefined) {
    throw new WireError('containment-unavailable', 'Containment unavailable: Seatbelt cannot remap paths: remove "target-path" from the profile\'s filesystem grants');
  }
  const lines = [
    '(version 1)',
    '(deny default)',
    `; Switchyard trust profile ${input.revision}`,
    '(allow process-fork process-exec)',
    '(allow signal (target same-sandbox))',
    '(allow process-info* (target same-sandbox))',
    '(allow sysctl-read)',
    `(allow mach-lookup ${SERVICES.map((s) => `(global-name ${sbplString(s)})`).join(' ')})`,
    '(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))',
    '(allow file-read-metadata)',
    `(allow file-read* ${subpaths(SYSTEM_READ)})`,
    '(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper"))',
    '(allow file-read* (literal "/dev/random") (literal "/dev/urandom"))',
  ];
  if (input.readPaths.length > 0) lines.push(`(allow file-read* ${subpaths(input.readPaths)})`);
  const depth = (p: string) => p.split('/').length;
  for (const grant of [...effective.filesystemPaths].sort((a, b) => depth(a.sourcePath) - depth(b.sourcePath))) {
    const path = `(subpath ${sbplString(grant.sourcePath)})`;
    lines.push(`(allow file-read* ${path})`, grant.accessMode === 'read-write' ? `(allow file-write* ${path})` : `(deny file-write* ${path})`);
  }
  // Contained: a profile that says nothing of the network gets none (DESIGN §5), and
  // internet-client never reaches the host's own loopback (the later rule wins in SBPL).
  if (containedNetwork(effective) === 'internet-client') lines.push('(allow system-socket)', '(allow network-outbound)', '(deny network-outbound (remote ip "localhost:*"))');
  return `${lines.join('\n')}\n`;
}

/**
 * @param input The profile, the launch and the revision; `executable` is the probed `sandbox-exec`.
 * @returns The policy fields the Seatbelt backend runs as `sandbox-exec -p <profile> file ...launch.args`.
 */
export function seatbeltPolicy(input: CompileInput): SeatbeltPolicyFields {
  const paths = launchPaths(input.launch, input.home, input.effective.filesystemPaths);
  const profile = seatbeltProfile({ effective: input.effective, readPaths: paths.readOnly, revision: input.revision });
  return {
    backend: 'seatbelt',
    executable: input.executable,
    profile,
    env: containedEnvironment(input.effective.environment, input.launch.env, input.sidecarEnv),
    cwd: input.launch.cwd ?? '/',
    revision: input.revision,
  };
}
