import { describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import { bubblewrapLaunch } from './bubblewrap-backend.ts';

const fields = { backend: 'bubblewrap', executable: '/usr/bin/bwrap', args: ['--unshare-all'], env: { PATH: '/usr/bin' }, cwd: '/srv', revision: 'sha256:r' } as const;
const exit = { code: 1, signal: null };

describe('the bubblewrap backend', () => {
  it('wraps a launch as bwrap --json-status-fd 3 [...policy] -- command ...args, with the policy environment', () => {
    expect(bubblewrapLaunch(fields).wrap('/usr/bin/node', ['server.js', '--flag'])).toEqual({
      file: '/usr/bin/bwrap',
      args: ['--json-status-fd', '3', '--unshare-all', '--', '/usr/bin/node', 'server.js', '--flag'],
      env: { PATH: '/usr/bin' },
      cwd: '/srv',
      extraPipes: 1,
    });
  });

  it('a spread copy with changed fields wraps with the changed fields', () => {
    const copy = { ...bubblewrapLaunch(fields), args: ['--unshare-net'] };
    expect(copy.wrap('/bin/true', []).args).toEqual(['--json-status-fd', '3', '--unshare-net', '--', '/bin/true']);
  });

  it('classifies bwrap setup failures, and leaves the server exits alone', () => {
    const policy = bubblewrapLaunch(fields);
    const unavailable = policy.classifyFailure('bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces\n', exit);
    expect(unavailable).toBeInstanceOf(WireError);
    expect(unavailable?.reason).toBe('containment-unavailable');
    const failed = policy.classifyFailure("bwrap: Can't find source path /secret/path: No such file or directory\n", exit);
    expect(failed?.reason).toBe('launch-failed');
    expect(failed?.message).not.toContain('/secret/path');
    expect(policy.classifyFailure('Error: server crashed\nbwrap: later line\n', exit)).toBeUndefined();
  });

  it('says unknown readiness when there is no status pipe', async () => {
    expect(await bubblewrapLaunch(fields).whenReady([], new AbortController().signal)).toBe('unknown');
  });
});
