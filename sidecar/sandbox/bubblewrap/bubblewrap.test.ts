import { lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import { createLogger } from '../../log.ts';
import { type EffectiveProfile, type FilesystemGrant, NEUTRAL_PROFILE, type NetworkCapability } from '../../trust/effective-profile.ts';
import type { ContainmentProbe } from '../availability.ts';
import { bubblewrapPolicy } from './bubblewrap.ts';
import { containedEnvironment } from '../environment.ts';

const node = process.execPath;
const MIB64 = String(64 * 1024 * 1024);
const slirpInstalled: ContainmentProbe = async () => ({ available: true, executable: '/usr/bin/slirp4netns' });

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-bwrap-compile-'));
  for (const dir of ['srv/a/b', 'srv/app/work', 'data', 'real']) mkdirSync(join(root, dir), { recursive: true });
  symlinkSync(join(root, 'real'), join(root, 'link'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A path under this test's own root, which exists. */
const at = (path: string) => join(root, path);

function grant(sourcePath: string, accessMode: FilesystemGrant['accessMode'], targetPath = sourcePath): FilesystemGrant {
  return { sourcePath, targetPath, accessMode };
}

function compile(
  profile: Partial<EffectiveProfile>,
  launch: { args?: string[]; cwd?: string; env?: Record<string, string> } = {},
  sidecarEnv: Record<string, string> = {},
  extra: { networkProbe?: ContainmentProbe; log?: ReturnType<typeof createLogger> } = {},
) {
  return bubblewrapPolicy({
    effective: { ...NEUTRAL_PROFILE, ...profile },
    launch: { file: node, args: launch.args ?? [], ...(launch.cwd ? { cwd: launch.cwd } : {}), ...(launch.env ? { env: launch.env } : {}) },
    executable: '/usr/bin/bwrap',
    revision: 'sha256:abc',
    home: homedir(),
    sidecarEnv,
    tmpSizeBytes: 64 * 1024 * 1024,
    networkProbe: extra.networkProbe ?? slirpInstalled,
    log: extra.log ?? createLogger({ write: () => {} }),
  });
}

/** The `[flag, a, b]` triples of a given flag, in order. */
function mounts(args: readonly string[], flags: string[]): [string, string, string][] {
  const out: [string, string, string][] = [];
  args.forEach((arg, i) => {
    if (flags.includes(arg)) out.push([arg, args[i + 1]!, args[i + 2]!]);
  });
  return out;
}

describe('bubblewrapPolicy', () => {
  it('always isolates namespaces, user namespaces, session and capabilities', async () => {
    const { args } = await compile({ networkCapabilities: [] });
    expect(args.slice(0, 7)).toEqual(['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--cap-drop', 'ALL']);
    expect(args.slice(-6)).toEqual(['--remount-ro', '/dev', '--remount-ro', '/', '--chdir', '/tmp']);
  });

  it('caps the private /tmp and /dev/shm at the configured size', async () => {
    const { args } = await compile({ networkCapabilities: [] });
    expect(args.join(' ')).toContain(`--size ${MIB64} --tmpfs /tmp --proc /proc`);
    expect(args.join(' ')).toContain(`--dev /dev --size ${MIB64} --tmpfs /dev/shm`);
  });

  it('makes /proc/sys and the other kernel knobs read-only right after mounting /proc', async () => {
    const { args } = await compile({ networkCapabilities: [] });
    const proc = args.indexOf('--proc');
    expect(args.slice(proc, proc + 17)).toEqual([
      '--proc', '/proc',
      '--ro-bind', '/proc/sys', '/proc/sys',
      '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger',
      '--ro-bind-try', '/proc/irq', '/proc/irq',
      '--ro-bind-try', '/proc/bus', '/proc/bus',
      '--ro-bind-try', '/proc/fs', '/proc/fs',
    ]);
  });

  it.each<[string, NetworkCapability[] | undefined, string]>([
    ['no network', [], 'none'],
    ['loopback', ['loopback'], 'loopback'],
    ['internet-client', ['internet-client'], 'internet-client'],
    ['a profile that grants paths and says nothing of the network', undefined, 'none'],
  ])('never shares the host network namespace, for %s', async (_name, network, expected) => {
    const policy = await compile({ networkCapabilities: network, filesystemPaths: [grant(at('srv'), 'read-only')] });
    expect(policy.args).not.toContain('--share-net');
    expect(policy.network).toBe(expected);
    expect(policy.userModeNetwork).toBe(expected === 'internet-client' ? '/usr/bin/slirp4netns' : undefined);
  });

  it('gives internet-client a resolv.conf naming the user-mode DNS relay, others the host one', async () => {
    const internet = await compile({ networkCapabilities: ['internet-client'] });
    expect(mounts(internet.args, ['--ro-bind-data'])).toEqual([['--ro-bind-data', '5', '/etc/resolv.conf']]);
    const none = await compile({ networkCapabilities: [] });
    expect(mounts(none.args, ['--ro-bind-data'])).toEqual([]);
  });

  it('fails closed with containment-unavailable naming slirp4netns when internet-client has no helper', async () => {
    const missing: ContainmentProbe = async () => ({ available: false, problem: 'missing', message: 'Containment unavailable: install slirp4netns' });
    const error = await compile({ networkCapabilities: ['internet-client'] }, {}, {}, { networkProbe: missing }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'containment-unavailable', detail: { package: 'slirp4netns' } });
    expect(await compile({ networkCapabilities: ['loopback'] }, {}, {}, { networkProbe: missing })).toMatchObject({ network: 'loopback' });
  });

  it('recreates host symlinks such as usrmerge /bin as symlinks', async () => {
    const { args } = await compile({ networkCapabilities: [] });
    for (const dir of ['/bin', '/lib', '/sbin']) {
      let stat;
      try {
        stat = lstatSync(dir);
      } catch {
        continue;
      }
      if (stat.isSymbolicLink()) expect(args.join(' ')).toContain(`--symlink ${readlinkSync(dir)} ${dir}`);
      else expect(args.join(' ')).toContain(`--ro-bind ${dir} ${dir}`);
    }
  });

  it('never mounts $HOME, /etc/shadow or TLS private keys', async () => {
    const { args } = await compile({ networkCapabilities: [] }, { cwd: homedir() });
    const sources = mounts(args, ['--bind', '--ro-bind']).map(([, source]) => source);
    expect(sources).not.toContain(homedir());
    expect(sources.filter((s) => s.startsWith('/etc/shadow') || s.startsWith('/etc/ssl/private'))).toEqual([]);
    expect(args.join(' ')).toContain(`--dir ${homedir()}`);
  });

  it('mounts grants shallowest first with their access, each from its own descriptor', async () => {
    const policy = await compile({ filesystemPaths: [grant(at('srv/a/b'), 'read-only'), grant(at('srv/a'), 'read-write'), grant(at('data'), 'read-only', '/mnt/data')] });
    expect(mounts(policy.args, ['--bind-fd', '--ro-bind-fd'])).toEqual([
      ['--ro-bind-fd', '6', '/mnt/data'],
      ['--bind-fd', '5', at('srv/a')],
      ['--ro-bind-fd', '4', at('srv/a/b')],
    ]);
    expect(policy.grantSources).toEqual([at('srv/a/b'), at('srv/a'), at('data')]);
    expect(mounts(policy.args, ['--bind', '--ro-bind']).filter(([, source]) => source.startsWith(root))).toEqual([]);
  });

  it('numbers grant descriptors after the block and resolv.conf fds under internet-client', async () => {
    const policy = await compile({ networkCapabilities: ['internet-client'], filesystemPaths: [grant(at('data'), 'read-only')] });
    expect(mounts(policy.args, ['--ro-bind-fd'])).toEqual([['--ro-bind-fd', '6', at('data')]]);
  });

  it('refuses a grant that is not its own real path, logging the path and not saying it', async () => {
    const lines: string[] = [];
    const error = await compile({ filesystemPaths: [grant(at('link'), 'read-only')] }, {}, {}, { log: createLogger({ write: (line) => lines.push(line) }) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
    expect((error as WireError).message).not.toContain(root);
    expect(lines.join('\n')).toContain(at('link'));
  });

  it.each<[string, FilesystemGrant['accessMode'], string]>([
    ['/', 'read-only', 'proc'],
    ['/proc', 'read-only', 'proc'],
    ['/proc/1', 'read-only', 'proc'],
    ['/sys', 'read-write', 'sysfs'],
  ])("refuses a grant of %s (%s), which would bring in the host's %s", async (source, mode, type) => {
    const lines: string[] = [];
    const error = await compile({ filesystemPaths: [grant(source, mode, '/mnt/host')] }, {}, {}, { log: createLogger({ write: (line) => lines.push(line) }) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', message: `Cannot start contained process: a path its trust profile grants exposes the host's ${type} filesystem; the sidecar log names it` });
    expect(lines.join('\n')).toContain(`"path":"${source}"`);
  });

  it('still grants /sys read-only', async () => {
    const policy = await compile({ filesystemPaths: [grant('/sys', 'read-only', '/mnt/sys')] });
    expect(mounts(policy.args, ['--ro-bind-fd'])).toEqual([['--ro-bind-fd', '4', '/mnt/sys']]);
  });

  it('refuses a script the server turned into a symlink out of its writable grant', async () => {
    mkdirSync(at('planted'), { recursive: true });
    writeFileSync(at('outside-secret'), 'KEY');
    symlinkSync(at('outside-secret'), at('planted/server.js'));
    const error = await compile({ filesystemPaths: [grant(at('planted'), 'read-write')] }, { args: [at('planted/server.js')], cwd: at('planted') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed' });
    expect((error as WireError).message).not.toContain(root);
  });

  it('mounts each implicit launch root outside the grants from a descriptor after the grants, never by path', async () => {
    mkdirSync(at('tools/echo'), { recursive: true });
    writeFileSync(at('tools/echo/package.json'), '{}');
    writeFileSync(at('tools/echo/server.js'), '');
    const policy = await compile({ filesystemPaths: [grant(at('data'), 'read-only')] }, { args: [at('tools/echo/server.js')], cwd: at('srv/app') });
    expect(policy.launchRoots).toEqual([at('srv/app'), at('tools/echo')]);
    expect(mounts(policy.args, ['--ro-bind-fd', '--bind-fd']).filter(([, , target]) => target.startsWith(root))).toEqual([
      ['--ro-bind-fd', '4', at('data')],
      ['--ro-bind-fd', '5', at('srv/app')],
      ['--ro-bind-fd', '6', at('tools/echo')],
    ]);
    expect(mounts(policy.args, ['--bind', '--ro-bind']).filter(([, source]) => source.startsWith(root))).toEqual([]);
    expect(policy.grantSources).toEqual([at('data')]);
  });

  it('refuses a launch root that is not its own real path, logging the path and not saying it', async () => {
    writeFileSync(at('real/server.js'), '');
    const lines: string[] = [];
    const error = await compile({ networkCapabilities: [] }, { args: [at('link/server.js')] }, {}, { log: createLogger({ write: (line) => lines.push(line) }) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', message: expect.stringMatching(/^Cannot start contained process: a path its command, script or working directory is mounted from /) });
    expect((error as WireError).message).not.toContain(root);
    expect(lines.join('\n')).toContain(at('link'));
  });

  it('leaves an implicit read-only path inside a writable grant to the grant', async () => {
    const { args } = await compile({ filesystemPaths: [grant(at('srv/app'), 'read-write')] }, { cwd: at('srv/app/work') });
    expect(mounts(args, ['--bind', '--ro-bind', '--bind-fd']).filter(([, , target]) => target.startsWith(root))).toEqual([['--bind-fd', '4', at('srv/app')]]);
    expect(args.slice(-2)).toEqual(['--chdir', at('srv/app/work')]);
  });

  it('passes the environment exactly and keeps values out of argv', async () => {
    const policy = await compile(
      { networkCapabilities: [], environment: { inherit: ['PATH', 'LANG'], set: { NODE_ENV: 'production' } } },
      { env: { API_TOKEN: 'server-config-value' } },
      { PATH: '/usr/bin:/bin', SWITCHYARD_SECRET: 'sidecar-secret-value' },
    );
    expect(policy.env).toEqual({ PATH: '/usr/bin:/bin', API_TOKEN: 'server-config-value', NODE_ENV: 'production', HOME: '/tmp' });
    expect(policy.args.join(' ')).not.toMatch(/secret-value|server-config-value|production|--setenv|--clearenv/);
    expect(policy).toMatchObject({ backend: 'bubblewrap', executable: '/usr/bin/bwrap', revision: 'sha256:abc', cwd: '/tmp' });
  });
});

describe('containedEnvironment', () => {
  it.each<[string, Parameters<typeof containedEnvironment>, Record<string, string>]>([
    ['no rule gives only HOME and the server env', [undefined, { A: '1' }, { PATH: '/bin' }], { A: '1', HOME: '/tmp' }],
    ['inherits only names set in the sidecar', [{ inherit: ['PATH', 'UNSET'], set: {} }, undefined, { PATH: '/bin' }], { PATH: '/bin', HOME: '/tmp' }],
    ['lets the server env override inherited values', [{ inherit: ['LANG'], set: {} }, { LANG: 'C' }, { LANG: 'en_US' }], { LANG: 'C', HOME: '/tmp' }],
    ['gives the profile set the last word', [{ inherit: [], set: { MODE: 'profile' } }, { MODE: 'server' }, {}], { MODE: 'profile', HOME: '/tmp' }],
    ['keeps an explicit HOME', [{ inherit: [], set: { HOME: '/work' } }, undefined, {}], { HOME: '/work' }],
  ])('%s', (_name, args, expected) => {
    expect(containedEnvironment(...args)).toEqual(expected);
  });
});
