/**
 * Where a process's cgroups are in the file system, read from what the kernel says of it
 * (`/proc/self/cgroup`) and of the mounts (`/proc/self/mountinfo`). Pure, so every host's layout
 * is a test input: the unified hierarchy alone (cgroup v2: Debian 12, Ubuntu 22.04, Fedora), v1
 * hierarchies beside it (hybrid: older systemd, some VMs and CI machines), or v1 alone.
 *
 * @module
 */

/** The process's own cgroup directories that can bound a server's process tree. */
export interface CgroupPlacement {
  /** Its cgroup in the unified (v2) hierarchy, when that is mounted: `cgroup.kill`, and `pids.max` when the controller is there. */
  readonly unified?: string;
  /** Its cgroup in a v1 hierarchy holding the `pids` controller (hybrid and v1 hosts), when one is mounted. */
  readonly pidsV1?: string;
  /** Its cgroup in a v1 hierarchy holding the `memory` controller, when one is mounted. */
  readonly memoryV1?: string;
  /** Its cgroup in a v1 hierarchy holding the `cpu` controller (often mounted with `cpuacct`), when one is mounted. */
  readonly cpuV1?: string;
}

interface CgroupMount {
  readonly root: string;
  readonly mountPoint: string;
  readonly v2: boolean;
  readonly controllers: readonly string[];
}

/** The placement `selfCgroup` (a `/proc/PID/cgroup`) has under the mounts of `mountinfo` (a `/proc/PID/mountinfo`). */
export function cgroupPlacement(mountinfo: string, selfCgroup: string): CgroupPlacement {
  const mounts = cgroupMounts(mountinfo);
  let unified: string | undefined;
  let pidsV1: string | undefined;
  let memoryV1: string | undefined;
  let cpuV1: string | undefined;
  for (const line of selfCgroup.split('\n')) {
    // "ID:CONTROLLERS:PATH"; the path may itself hold colons.
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, id, controllers, path] = match as unknown as [string, string, string, string];
    if (id === '0' && controllers === '') {
      unified ??= dirOf(mounts.filter((mount) => mount.v2), path);
    } else {
      const names = controllers.split(',');
      if (names.includes('pids')) pidsV1 ??= dirOf(mounts.filter((mount) => !mount.v2 && mount.controllers.includes('pids')), path);
      if (names.includes('memory')) memoryV1 ??= dirOf(mounts.filter((mount) => !mount.v2 && mount.controllers.includes('memory')), path);
      if (names.includes('cpu')) cpuV1 ??= dirOf(mounts.filter((mount) => !mount.v2 && mount.controllers.includes('cpu')), path);
    }
  }
  return {
    ...(unified !== undefined ? { unified } : {}),
    ...(pidsV1 !== undefined ? { pidsV1 } : {}),
    ...(memoryV1 !== undefined ? { memoryV1 } : {}),
    ...(cpuV1 !== undefined ? { cpuV1 } : {}),
  };
}

/** The first mount that shows `path`: a mount of a sub-tree (a container's) shows only what is under its root. */
function dirOf(mounts: readonly CgroupMount[], path: string): string | undefined {
  for (const mount of mounts) {
    const root = mount.root === '/' ? '' : mount.root;
    if (path !== root && !path.startsWith(`${root}/`)) continue;
    const rest = path.slice(root.length);
    return rest === '' || rest === '/' ? mount.mountPoint : `${mount.mountPoint.replace(/\/$/, '')}${rest}`;
  }
  return undefined;
}

/** The cgroup mounts of a mountinfo: "ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER-OPTIONS". */
function cgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || fields.length < dash + 4) continue;
    const type = fields[dash + 1];
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    mounts.push({
      root: unescapeMountField(fields[3]!),
      mountPoint: unescapeMountField(fields[4]!),
      v2: type === 'cgroup2',
      controllers: type === 'cgroup' ? fields[dash + 3]!.split(',') : [],
    });
  }
  return mounts;
}

/** mountinfo writes a space, tab, newline and backslash in a path as an octal escape (`\040`). */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}
