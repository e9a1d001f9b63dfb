import { fstatSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import { silentLogger } from '../../log.ts';
import type { SandboxDescriptor, SandboxSpawn, SpawnedSandbox } from '../../process/contained-launch.ts';
import { inheritableDescriptors } from '../../process/inherited-fds.ts';
import { bubblewrapLaunch, environmentArgs } from './bubblewrap-backend.ts';
import { seccompFilter } from './seccomp-filter.ts';
import { USER_MODE_RESOLV_CONF } from './user-mode-network.ts';

const fields = { backend: 'bubblewrap', executable: '/usr/bin/bwrap', args: ['--unshare-all'], env: { PATH: '/usr/bin' }, cwd: '/srv', revision: 'sha256:r' } as const;
const exit = { code: 1, signal: null };
const dir = mkdtempSync(join(tmpdir(), 'sy-bwrap-backend-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * What a spawn adds for the descriptors this test process holds without close-on-exec (a runner's
 * pipe, when there is one; test/sandbox/stray-fd.test.ts launches with some for certain): an
 * empty `--args` first for each, and its `/dev/null` at its number after the spawn's own.
 */
function masked(spawn: SandboxSpawn): { closing: string[]; descriptors: SandboxDescriptor[] } {
  const mask = spawn.inherited ?? null;
  return {
    closing: mask?.fds.flatMap((fd) => ['--args', String(fd)]) ?? [],
    descriptors: mask?.stdio.map((entry): SandboxDescriptor => (entry === 'ignore' ? 'ignore' : { fd: entry })) ?? [],
  };
}

const noSandbox: SpawnedSandbox = { pid: 0, descriptors: [], exited: new Promise(() => {}), kill: () => {}, adopt: () => {}, log: silentLogger };

describe('the bubblewrap backend', () => {
  it('wraps a launch as bwrap [--args N …] --args 5 --json-status-fd 3 --seccomp 4 [...policy] -- command ...args, the policy environment set inside the sandbox only', () => {
    const spawn = bubblewrapLaunch(fields).wrap('/usr/bin/node', ['server.js', '--flag']);
    const { closing, descriptors } = masked(spawn);
    expect(spawn).toMatchObject({
      file: '/usr/bin/bwrap',
      args: [...closing, '--args', '5', '--json-status-fd', '3', '--seccomp', '4', '--unshare-all', '--', '/usr/bin/node', 'server.js', '--flag'],
      // bwrap runs on the host: a server's LD_PRELOAD or LD_LIBRARY_PATH must not reach its loader (review s19).
      env: {},
      cwd: '/srv',
      descriptors: ['pipe', { data: seccompFilter() }, { data: '--clearenv\0--setenv\0PATH\0/usr/bin\0' }, ...descriptors],
    });
    spawn.release?.();
  });

  it('clears the environment and sets each variable of the policy, values as they are', () => {
    expect(environmentArgs({})).toBe('--clearenv\0');
    expect(environmentArgs({ LD_PRELOAD: '/w/x.so', A: 'two words\nand a line' }).split('\0')).toEqual(['--clearenv', '--setenv', 'LD_PRELOAD', '/w/x.so', '--setenv', 'A', 'two words\nand a line', '']);
  });

  it('refuses a variable whose NUL would end its argument and begin bwrap options, before opening anything (review s19)', () => {
    for (const env of [{ X: 'a\0--ro-bind\0/etc\0/leak' }, { 'X\0--bind': 'v' }, { 'A=B': 'v' }, { '': 'v' }] as Array<Record<string, string>>) {
      expect(() => environmentArgs(env)).toThrow(expect.objectContaining({ reason: 'launch-failed', cause: expect.objectContaining({ code: 'invalid-environment' }) }));
    }
    const before = readDescriptors().length;
    expect(() => bubblewrapLaunch({ ...fields, env: { X: 'a\0--ro-bind\0/etc\0/leak' }, grantSources: [dir] }).wrap('/bin/true', [])).toThrow(expect.objectContaining({ reason: 'launch-failed' }));
    expect(readDescriptors().length).toBe(before);
  });

  it('masks every descriptor this process holds without close-on-exec, above its own, on one /dev/null that release closes', () => {
    const spawn = bubblewrapLaunch(fields).wrap('/bin/true', []);
    const mask = spawn.inherited;
    expect(mask?.fds ?? []).toEqual(inheritableDescriptors().filter((fd) => fd >= 4));
    const placeholders = new Set((spawn.descriptors ?? []).slice(2).flatMap((d) => (typeof d === 'object' && 'fd' in d ? [d.fd] : [])));
    expect(placeholders.size).toBe(mask === null || mask === undefined ? 0 : 1);
    for (const fd of placeholders) expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe('/dev/null');
    spawn.release?.();
    for (const fd of placeholders) expect(() => fstatSync(fd)).toThrow(/EBADF/);
  });

  it('blocks internet-client on fd 4 and passes the resolv.conf on fd 5', () => {
    const spawn = bubblewrapLaunch({ ...fields, network: 'internet-client', userModeNetwork: '/usr/bin/slirp4netns' }).wrap('/bin/true', []);
    const { closing, descriptors } = masked(spawn);
    expect(spawn.args.slice(0, closing.length + 8)).toEqual([...closing, '--args', '7', '--json-status-fd', '3', '--block-fd', '4', '--seccomp', '6']);
    expect(spawn.descriptors).toEqual(['pipe', 'pipe', { data: USER_MODE_RESOLV_CONF }, { data: seccompFilter() }, { data: environmentArgs(fields.env) }, ...descriptors]);
    spawn.release?.();
  });

  it('opens each grant source once per launch, as descriptors of the spawn that release closes', () => {
    const spawn = bubblewrapLaunch({ ...fields, grantSources: [dir] }).wrap('/bin/true', []);
    const grant = spawn.descriptors?.[1];
    expect(grant).toEqual({ fd: expect.any(Number) });
    const fd = (grant as { fd: number }).fd;
    expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe(dir);
    // Close-on-exec: a concurrent spawn of another server cannot inherit it.
    expect(inheritableDescriptors()).not.toContain(fd);
    spawn.release?.();
    expect(() => fstatSync(fd)).toThrow(/EBADF/);
  });

  it('passes the seccomp filter after the grants, so their numbers stay those the compiler wrote', () => {
    const spawn = bubblewrapLaunch({ ...fields, grantSources: [dir, dir] }).wrap('/bin/true', []);
    const { closing } = masked(spawn);
    expect(spawn.args.slice(closing.length, closing.length + 6)).toEqual(['--args', '7', '--json-status-fd', '3', '--seccomp', '6']);
    expect(spawn.descriptors?.slice(0, 5)).toEqual(['pipe', { fd: expect.any(Number) }, { fd: expect.any(Number) }, { data: seccompFilter() }, { data: environmentArgs(fields.env) }]);
    spawn.release?.();
  });

  it('opens each launch root at every launch, after the grants and before the seccomp filter', () => {
    const policy = bubblewrapLaunch({ ...fields, grantSources: [dir], launchRoots: [dir] });
    const spawn = policy.wrap('/bin/true', []);
    const { closing } = masked(spawn);
    expect(spawn.args.slice(closing.length, closing.length + 6)).toEqual(['--args', '7', '--json-status-fd', '3', '--seccomp', '6']);
    expect(spawn.descriptors?.slice(0, 5)).toEqual(['pipe', { fd: expect.any(Number) }, { fd: expect.any(Number) }, { data: seccompFilter() }, { data: environmentArgs(fields.env) }]);
    const fd = (spawn.descriptors?.[2] as { fd: number }).fd;
    expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe(dir);
    expect(inheritableDescriptors()).not.toContain(fd);
    spawn.release?.();
    expect(() => fstatSync(fd)).toThrow(/EBADF/);
    // The policy holds paths only: the next launch opens them afresh.
    const again = policy.wrap('/bin/true', []);
    expect(readlinkSync(`/proc/self/fd/${(again.descriptors?.[2] as { fd: number }).fd}`)).toBe(dir);
    again.release?.();
  });

  it('refuses to wrap when a launch root became a symlink, naming no path and leaving nothing open', () => {
    const link = join(dir, 'swapped-root');
    symlinkSync('/etc', link);
    const before = readDescriptors().length;
    let error: unknown;
    try {
      bubblewrapLaunch({ ...fields, grantSources: [dir], launchRoots: [link] }).wrap('/bin/true', []);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', cause: { code: 'launch-root-not-real-path' } });
    expect((error as WireError).message).not.toContain(dir);
    expect(readDescriptors().length).toBe(before);
  });

  it('refuses to wrap when a grant source became a symlink, leaving nothing open', () => {
    const link = join(dir, 'swapped');
    symlinkSync('/etc', link);
    const before = readDescriptors().length;
    let error: unknown;
    try {
      bubblewrapLaunch({ ...fields, grantSources: [dir, link] }).wrap('/bin/true', []);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
    expect((error as WireError).message).not.toContain(link);
    expect(readDescriptors().length).toBe(before);
  });

  it('a spread copy with changed fields wraps with the changed fields', () => {
    const copy = { ...bubblewrapLaunch(fields), args: ['--unshare-net'] };
    const spawn = copy.wrap('/bin/true', []);
    expect(spawn.args).toEqual([...masked(spawn).closing, '--args', '5', '--json-status-fd', '3', '--seccomp', '4', '--unshare-net', '--', '/bin/true']);
    spawn.release?.();
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
    expect(await bubblewrapLaunch(fields).whenReady(noSandbox, new AbortController().signal)).toBe('unknown');
  });
});

/** This process's open descriptors (readdir's own handle included, closed again by the time it returns). */
function readDescriptors(): number[] {
  return readdirSync('/proc/self/fd').map(Number);
}
