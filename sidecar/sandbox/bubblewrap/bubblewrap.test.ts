import { lstatSync, readlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { type EffectiveProfile, type FilesystemGrant, NEUTRAL_PROFILE, type NetworkCapability } from '../../trust/effective-profile.ts';
import { bubblewrapPolicy } from './bubblewrap.ts';
import { containedEnvironment } from '../environment.ts';

const node = process.execPath;

function grant(sourcePath: string, accessMode: FilesystemGrant['accessMode'], targetPath = sourcePath): FilesystemGrant {
  return { sourcePath, targetPath, accessMode };
}

function compile(profile: Partial<EffectiveProfile>, launch: { args?: string[]; cwd?: string; env?: Record<string, string> } = {}, sidecarEnv: Record<string, string> = {}) {
  return bubblewrapPolicy({
    effective: { ...NEUTRAL_PROFILE, ...profile },
    launch: { file: node, args: launch.args ?? [], ...(launch.cwd ? { cwd: launch.cwd } : {}), ...(launch.env ? { env: launch.env } : {}) },
    executable: '/usr/bin/bwrap',
    revision: 'sha256:abc',
    home: homedir(),
    sidecarEnv,
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
  it('always isolates namespaces, session and capabilities', () => {
    const { args } = compile({ networkCapabilities: [] });
    expect(args.slice(0, 5)).toEqual(['--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL']);
    expect(args.slice(-4)).toEqual(['--remount-ro', '/', '--chdir', '/tmp']);
    expect(args.join(' ')).toContain('--tmpfs /tmp --proc /proc --dev /dev');
  });

  it.each<[string, NetworkCapability[] | undefined, boolean]>([
    ['no network', [], false],
    ['loopback', ['loopback'], false],
    ['internet-client', ['internet-client'], true],
    ['an unconstrained network', undefined, true],
  ])('shares the host network for %s: %s', (_name, network, shared) => {
    const { args } = compile({ networkCapabilities: network, filesystemPaths: [grant('/srv', 'read-only')] });
    expect(args.includes('--share-net')).toBe(shared);
  });

  it('recreates host symlinks such as usrmerge /bin as symlinks', () => {
    const { args } = compile({ networkCapabilities: [] });
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

  it('never mounts $HOME, /etc/shadow or TLS private keys', () => {
    const { args } = compile({ networkCapabilities: [] }, { cwd: homedir() });
    const sources = mounts(args, ['--bind', '--ro-bind']).map(([, source]) => source);
    expect(sources).not.toContain(homedir());
    expect(sources.filter((s) => s.startsWith('/etc/shadow') || s.startsWith('/etc/ssl/private'))).toEqual([]);
    expect(args.join(' ')).toContain(`--dir ${homedir()}`);
  });

  it('mounts grants shallowest first with their access', () => {
    const { args } = compile({ filesystemPaths: [grant('/srv/a/b', 'read-only'), grant('/srv/a', 'read-write'), grant('/data', 'read-only', '/mnt/data')] });
    expect(mounts(args, ['--bind', '--ro-bind']).slice(-3)).toEqual([
      ['--bind', '/srv/a', '/srv/a'],
      ['--ro-bind', '/data', '/mnt/data'],
      ['--ro-bind', '/srv/a/b', '/srv/a/b'],
    ]);
  });

  it('leaves an implicit read-only path inside a writable grant to the grant', () => {
    const { args } = compile({ filesystemPaths: [grant('/srv/app', 'read-write')] }, { cwd: '/srv/app/work' });
    expect(mounts(args, ['--bind', '--ro-bind']).filter(([, source]) => source.startsWith('/srv'))).toEqual([['--bind', '/srv/app', '/srv/app']]);
    expect(args.slice(-2)).toEqual(['--chdir', '/srv/app/work']);
  });

  it('passes the environment exactly and keeps values out of argv', () => {
    const policy = compile(
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
