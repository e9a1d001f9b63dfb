import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.ts';
import { WireError } from '../../../shared/errors.ts';
import { seatbeltLaunch } from './seatbelt-backend.ts';

const fields = { backend: 'seatbelt', executable: '/usr/bin/sandbox-exec', profile: '(version 1)', env: { PATH: '/usr/bin' }, cwd: '/', revision: 'sha256:r' } as const;

describe('the Seatbelt backend', () => {
  it('wraps a launch as sandbox-exec -p <profile> command ...args on macOS', () => {
    expect(seatbeltLaunch(fields, 'darwin').wrap('/usr/local/bin/node', ['server.js'])).toEqual({
      file: '/usr/bin/sandbox-exec',
      args: ['-p', '(version 1)', '/usr/local/bin/node', 'server.js'],
      env: { PATH: '/usr/bin' },
      cwd: '/',
    });
  });

  it('refuses to wrap anywhere else, with containment-unavailable', () => {
    let error: unknown;
    try {
      seatbeltLaunch(fields, 'linux').wrap('/usr/bin/node', []);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('containment-unavailable');
  });

  it('cannot tell readiness, and classifies sandbox-exec failures only', async () => {
    const policy = seatbeltLaunch(fields, 'darwin');
    const sandbox = { pid: 0, descriptors: [], exited: new Promise<never>(() => {}), kill: () => {}, adopt: () => {}, log: silentLogger };
    expect(await policy.whenReady(sandbox, new AbortController().signal)).toBe('unknown');
    expect(policy.classifyFailure('sandbox-exec: sandbox_apply: Operation not permitted\n', { code: 71, signal: null })?.reason).toBe('containment-unavailable');
    expect(policy.classifyFailure('sandbox-exec: invalid profile\n', { code: 65, signal: null })?.reason).toBe('launch-failed');
    expect(policy.classifyFailure('bwrap: not mine\n', { code: 1, signal: null })).toBeUndefined();
  });
});
