import { describe, expect, it } from 'vitest';
import { cgroupPlacement } from './cgroup-placement.ts';

// mountinfo and /proc/self/cgroup as three kinds of host write them.
const HYBRID_MOUNTS = [
  '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
  '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd',
  '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
const HYBRID_SELF = ['9:name=systemd:/', '8:pids:/system.slice/box.service', '4:memory:/process_api/bad52f', '2:cpu,cpuacct:/system.slice/box.service', '0::/system.slice/box.service', ''].join('\n');

const V2_MOUNTS = [
  '22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw',
  '26 21 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot',
].join('\n');
const V2_SELF = '0::/user.slice/user-1000.slice/user@1000.service/app.slice/switchyard-sidecar.service\n';

describe('cgroupPlacement', () => {
  it('finds the unified cgroup and the v1 pids, memory and cpu ones on a hybrid host', () => {
    expect(cgroupPlacement(HYBRID_MOUNTS, HYBRID_SELF)).toEqual({
      unified: '/sys/fs/cgroup/unified/system.slice/box.service',
      pidsV1: '/sys/fs/cgroup/pids/system.slice/box.service',
      memoryV1: '/sys/fs/cgroup/memory/process_api/bad52f',
      cpuV1: '/sys/fs/cgroup/cpu,cpuacct/system.slice/box.service',
    });
  });

  it('finds a systemd user unit\'s cgroup on a cgroup v2 host, and no v1 one', () => {
    expect(cgroupPlacement(V2_MOUNTS, V2_SELF)).toEqual({ unified: '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/switchyard-sidecar.service' });
  });

  it('reads the root cgroup as the mount point itself', () => {
    expect(cgroupPlacement(V2_MOUNTS, '0::/\n')).toEqual({ unified: '/sys/fs/cgroup' });
  });

  it('maps a path through a mount of a sub-tree (a container\'s bind mount) and ignores mounts that do not show it', () => {
    const mounts = [
      '50 40 0:23 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw',
      '51 40 0:23 /other /mnt/other rw - cgroup2 cgroup2 rw',
    ].join('\n');
    expect(cgroupPlacement(mounts, '0::/docker/abc/inner\n')).toEqual({ unified: '/sys/fs/cgroup/inner' });
    expect(cgroupPlacement(mounts, '0::/elsewhere\n')).toEqual({});
  });

  it('takes a v1 hierarchy only when it holds pids, memory or cpu, whatever other controllers share it', () => {
    const mounts = '38 30 0:35 / /sys/fs/cgroup/cpu\\040pids rw - cgroup cgroup rw,cpu,pids,memory';
    expect(cgroupPlacement(mounts, '3:cpu,pids,memory:/a:b\n')).toEqual({ pidsV1: '/sys/fs/cgroup/cpu pids/a:b', memoryV1: '/sys/fs/cgroup/cpu pids/a:b', cpuV1: '/sys/fs/cgroup/cpu pids/a:b' });
    // cpuacct and cpuset are not cpu.
    const others = HYBRID_MOUNTS.replace('rw,pids', 'rw,devices').replace('rw,memory', 'rw,cpuset').replace('rw,cpu,cpuacct', 'rw,cpuacct');
    expect(cgroupPlacement(others, HYBRID_SELF.replace('2:cpu,cpuacct:', '2:cpuacct:'))).toEqual({ unified: '/sys/fs/cgroup/unified/system.slice/box.service' });
  });

  it('finds nothing where no cgroup is mounted', () => {
    expect(cgroupPlacement('22 1 259:2 / / rw - ext4 /dev/sda rw\n', V2_SELF)).toEqual({});
  });
});
