import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { parseMcpServersFile } from '../host/server-config.ts';
import { createLogger } from '../log.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../trust/effective-profile.ts';
import { configDirExposures, configDirWarnings, grantExposureReason, grantExposures, systemExposureReason } from './config-dir-exposure.ts';
import { compileContainment, type ContainmentLaunch, type ContainmentProbe, systemPathsHere } from './index.ts';

const NODE = process.execPath;
let root: string;
let configDir: string;
let home: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-config-exposure-'));
  home = join(root, 'home');
  configDir = join(root, 'pkg', 'sidecar');
  for (const dir of [home, configDir, join(root, 'pkg', 'bin'), join(root, 'elsewhere', 'work'), join(root, 'grant')]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(configDir, 'host.key'), 'the host key\n', { mode: 0o600 });
  writeFileSync(join(configDir, 'server.mjs'), 'console.log("kept in the config dir")\n');
  writeFileSync(join(root, 'pkg', 'package.json'), '{}');
  writeFileSync(join(root, 'pkg', 'bin', 'server.js'), 'console.log("an installed server")\n');
  writeFileSync(join(root, 'elsewhere', 'server.mjs'), 'console.log("fine")\n');
  symlinkSync(configDir, join(root, 'config-link'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const bwrapInstalled: ContainmentProbe = async () => ({ available: true, executable: '/usr/bin/bwrap' });
const strict: EffectiveProfile = { ...NEUTRAL_PROFILE, networkCapabilities: [] };

describe('configDirExposures', () => {
  it.each<[string, ContainmentLaunch, string, string]>([
    ['a cwd of "." (the config dir itself)', { file: NODE, args: [], cwd: '<config>' }, 'cwd', '<config>'],
    ['a cwd inside the config dir', { file: NODE, args: [], cwd: '<config>/mcp-servers' }, 'cwd', '<config>/mcp-servers'],
    // The config dir sits in a package here, so a file in it exposes the whole package.
    ['a script kept in the config dir', { file: NODE, args: ['<config>/server.mjs'] }, 'script', '<root>/pkg'],
    ['a command inside the config dir', { file: '<config>/server.mjs', args: [] }, 'command', '<root>/pkg'],
    ['an install root around the config dir', { file: NODE, args: ['<root>/pkg/bin/server.js'] }, 'script', '<root>/pkg'],
    ['the config dir reached through a symlink', { file: NODE, args: [], cwd: '<root>/config-link' }, 'cwd', '<root>/config-link'],
  ])('finds %s', (_name, launch, by, path) => {
    const fill = (p: string) => p.replace('<config>', configDir).replace('<root>', root);
    const concrete = { ...launch, file: fill(launch.file), args: launch.args.map(fill), ...(launch.cwd ? { cwd: fill(launch.cwd) } : {}) };
    if (concrete.cwd?.endsWith('mcp-servers')) mkdirSync(concrete.cwd, { recursive: true });
    expect(configDirExposures(configDir, concrete, { home })).toContainEqual({ path: fill(path), by });
  });

  it('finds a grant that contains the config dir, and one inside it', () => {
    const grants = [root, join(configDir, 'trust-profiles')].map((p) => ({ sourcePath: p, targetPath: p, accessMode: 'read-only' as const }));
    expect(configDirExposures(configDir, { file: NODE, args: [] }, { home, grants })).toEqual([
      { path: root, by: 'grant' },
      { path: join(configDir, 'trust-profiles'), by: 'grant' },
    ]);
  });

  it('finds nothing for a launch that keeps away from the config dir', () => {
    const launch = { file: NODE, args: [join(root, 'elsewhere', 'server.mjs')], cwd: join(root, 'elsewhere', 'work') };
    const grants = [{ sourcePath: join(root, 'grant'), targetPath: join(root, 'grant'), accessMode: 'read-write' as const }];
    expect(configDirExposures(configDir, launch, { home, grants })).toEqual([]);
  });
});

describe('grantExposures: the part of the rule a profile decides alone (for check and doctor)', () => {
  const grant = (p: string) => ({ sourcePath: p, targetPath: p, accessMode: 'read-only' as const });

  it('finds exactly the grants compileContainment refuses, whatever the launch', () => {
    const grants = [root, join(configDir, 'trust-profiles'), join(root, 'grant')].map(grant);
    const launch = { file: NODE, args: [join(root, 'elsewhere', 'server.mjs')], cwd: join(root, 'elsewhere', 'work') };
    expect(grantExposures(configDir, grants)).toEqual(configDirExposures(configDir, launch, { home, grants }).filter((e) => e.by === 'grant'));
    expect(grantExposures(configDir, grants)).toEqual([{ path: root, by: 'grant' }, { path: join(configDir, 'trust-profiles'), by: 'grant' }]);
    expect(grantExposures(configDir, [grant(join(root, 'grant'))])).toEqual([]);
    // The config dir named through a symlink is still the one a grant of its real parent holds.
    expect(grantExposures(join(root, 'config-link'), [grant(join(root, 'pkg'))])).toEqual([{ path: join(root, 'pkg'), by: 'grant' }]);
  });

  it('says why with the paths (on the operator\'s machine) and the fix the sidecar\'s own refusal gives', async () => {
    const reason = grantExposureReason(configDir, grantExposures(configDir, [grant(root)]));
    expect(reason).toBe(`grants "${root}", which contains the sidecar config dir (${configDir}, which holds the host key), and a contained launch that would show any of it is refused; grant narrower paths in the profile, or move the config dir out of the granted tree`);
    const inside = grantExposureReason(configDir, grantExposures(configDir, [grant(join(configDir, 'trust-profiles'))]));
    expect(inside).toContain(`grants "${join(configDir, 'trust-profiles')}", which lies in the sidecar config dir`);
    const refusal = await compileContainment({ ...strict, filesystemPaths: [grant(root)] }, { file: NODE, args: [] }, { revision: 'sha256:r', platform: 'linux', probe: bwrapInstalled, configDir, home }).catch((e: unknown) => e as Error);
    expect((refusal as Error).message).toContain('grant narrower paths in the profile, or move the config dir out of the granted tree');
  });

  it('names the single-machine mode\'s dir for what it is: no sidecar, no host key (review s23)', async () => {
    expect(grantExposureReason(configDir, grantExposures(configDir, [grant(root)]), undefined, 'single-machine')).toBe(
      `grants "${root}", which contains the single-machine mode's config dir (${configDir}), and a contained launch that would show any of it is refused; grant narrower paths in the profile, or move the config dir out of the granted tree`,
    );
    const refusal = await compileContainment({ ...strict, filesystemPaths: [grant(root)] }, { file: NODE, args: [] }, { revision: 'sha256:r', platform: 'linux', probe: bwrapInstalled, configDir, configDirRole: 'single-machine', home }).catch((e: unknown) => e as Error);
    expect((refusal as Error).message).toBe(
      'Contained server cannot start: its trust profile grants a path that contains or lies in the single-machine mode\'s config dir inside the sandbox: on the host, grant narrower paths in the profile, or move the config dir out of the granted tree; the worker log names the path',
    );
  });
});

describe('compileContainment with the config dir', () => {
  const compile = (launch: ContainmentLaunch, effective = strict, lines: string[] = []) =>
    compileContainment(effective, launch, {
      revision: 'sha256:r',
      platform: 'linux',
      probe: bwrapInstalled,
      configDir,
      server: 'files',
      home,
      log: createLogger({ write: (line) => lines.push(line) }),
    });

  it('refuses "cwd": "." as resolved from an mcp.json with launch-failed, naming the server and the fix but no path', async () => {
    const servers = parseMcpServersFile({ mcpServers: { files: { command: NODE, args: [join(root, 'elsewhere', 'server.mjs')], cwd: '.' } } }, configDir);
    const entry = servers.get('files');
    if (entry?.kind !== 'stdio') throw new Error('expected a stdio entry');
    const lines: string[] = [];
    const error = await compile({ file: NODE, args: entry.args, ...(entry.cwd ? { cwd: entry.cwd } : {}) }, strict, lines).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { server: 'files', exposedBy: 'cwd' } });
    const message = (error as WireError).message;
    expect(message).toContain('Server "files"');
    expect(message).toContain('absolute "cwd" outside the config dir');
    expect(message).not.toContain(root);
    expect(lines.join('\n')).toContain(configDir);
  });

  it('refuses a script kept in the config dir', async () => {
    const error = await compile({ file: NODE, args: [join(configDir, 'server.mjs')] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { exposedBy: 'script' } });
  });

  it('compiles a launch that keeps away from the config dir, and leaves an uncontained one alone', async () => {
    expect(await compile({ file: NODE, args: [join(root, 'elsewhere', 'server.mjs')], cwd: join(root, 'elsewhere', 'work') })).toMatchObject({ backend: 'bubblewrap' });
    expect(await compile({ file: NODE, args: [join(configDir, 'server.mjs')], cwd: configDir }, NEUTRAL_PROFILE)).toBeNull();
  });
});

describe('the own files kept outside the config dir, and the system folders every sandbox shows (review s24)', () => {
  const grant = (p: string) => ({ sourcePath: p, targetPath: p, accessMode: 'read-only' as const });
  const keyFile = () => join(root, 'grant', 'keys', 'host.key');
  const files = () => [{ path: keyFile(), key: 'key-file' as const }, { path: join(root, 'logs', 'audit.log'), key: 'audit.file' as const }];

  it('finds a grant around the key file or the audit file, naming which', () => {
    expect(grantExposures(configDir, [grant(join(root, 'grant')), grant(join(root, 'logs')), grant(join(root, 'elsewhere'))], files())).toEqual([
      { path: join(root, 'grant'), by: 'grant', of: 'key-file' },
      { path: join(root, 'logs'), by: 'grant', of: 'audit.file' },
    ]);
    expect(grantExposures(configDir, [grant(join(root, 'grant'))])).toEqual([]);
  });

  it('finds a grant inside an own folder (the state dir), and an own file not there for now through its folder\'s real path (review s24)', () => {
    const state = join(root, 'state');
    mkdirSync(join(state, 'oauth'), { recursive: true });
    expect(grantExposures(configDir, [grant(join(state, 'oauth'))], [{ path: state, key: '--state-dir' }])).toEqual([{ path: join(state, 'oauth'), by: 'grant', of: '--state-dir' }]);
    mkdirSync(join(root, 'real-logs'), { recursive: true });
    symlinkSync(join(root, 'real-logs'), join(root, 'logs-link'));
    // Moved away by logrotate, not yet made again: still the file a grant of the real folder would show.
    expect(grantExposures(configDir, [grant(join(root, 'real-logs'))], [{ path: join(root, 'logs-link', 'audit.log'), key: 'audit.file' }])).toEqual([{ path: join(root, 'real-logs'), by: 'grant', of: 'audit.file' }]);
  });

  it('says which file and where on the operator\'s machine, and not where in a refusal that may cross the link', async () => {
    expect(grantExposureReason(configDir, grantExposures(configDir, [grant(join(root, 'grant'))], files()), undefined, 'sidecar', files())).toBe(
      `grants "${join(root, 'grant')}", which contains the host key file (key-file: ${keyFile()}), and a contained launch that would show any of it is refused; grant narrower paths in the profile, or move the key file out of the granted tree`,
    );
    const error = await compileContainment({ ...strict, filesystemPaths: [grant(join(root, 'grant'))] }, { file: NODE, args: [] }, { revision: 'sha256:r', platform: 'linux', probe: bwrapInstalled, configDir, ownFiles: files(), home }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { exposedBy: 'grant' } });
    expect((error as Error).message).toBe(
      "Contained server cannot start: its trust profile grants a path that contains or lies in the host key file (key-file) inside the sandbox: on the host, grant narrower paths in the profile, or move the key file out of the granted tree; the sidecar log names the path",
    );
  });

  it('refuses every contained launch when the config dir or an own file lies in a folder the backend always mounts', async () => {
    const under = '/usr/local/etc/switchyard-review-s24';
    expect(configDirExposures(under, { file: NODE, args: [] }, { home, system: ['/usr', '/lib'] })).toContainEqual({ path: '/usr', by: 'system' });
    const error = await compileContainment(strict, { file: '/bin/true', args: [] }, { revision: 'sha256:r', platform: 'linux', probe: bwrapInstalled, configDir: under, home }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { exposedBy: 'system' } });
    expect((error as Error).message).toContain('the system folders every sandbox shows read-only (/usr, /lib, parts of /etc) would expose the sidecar\'s config dir');
    const keyUnderEtc = await compileContainment(strict, { file: '/bin/true', args: [] }, { revision: 'sha256:r', platform: 'linux', probe: bwrapInstalled, configDir, ownFiles: [{ path: '/etc/ssl/certs/host.key', key: 'key-file' }], home }).catch((e: unknown) => e);
    expect(keyUnderEtc).toMatchObject({ reason: 'launch-failed', detail: { exposedBy: 'system' } });
    expect(systemExposureReason(under, [], ['/usr'])).toBe(
      `the sidecar config dir (${under}, which holds the host key) lies in "/usr", which every sandbox shows read-only: every contained launch is refused (launch-failed); move the config dir out of those folders`,
    );
    expect(systemExposureReason(configDir, files(), systemPathsHere('linux'))).toBeNull();
    expect(systemPathsHere('win32')).toEqual([]);
  });
});

describe('what the config dir links to outside it (QA s30: a profile a sandbox could rewrite)', () => {
  const grant = (p: string) => ({ sourcePath: p, targetPath: p, accessMode: 'read-write' as const });

  it('keeps a linked profile, and a linked folder of them, out of every sandbox, naming the link for what it is', async () => {
    const linking = join(root, 'linking', 'sidecar');
    const project = join(root, 'linking', 'project');
    const dotfiles = join(root, 'linking', 'dotfiles', 'profiles');
    for (const dir of [join(linking, 'trust-profiles'), project, dotfiles, join(root, 'linking', 'other')]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(project, 'floor.json'), '{}');
    symlinkSync(join(project, 'floor.json'), join(linking, 'trust-profiles', 'floor.json'));
    symlinkSync(dotfiles, join(linking, 'machines'));
    // A link that stays in the dir is the dir's own.
    symlinkSync(join(linking, 'trust-profiles', 'floor.json'), join(linking, 'trust-profiles', 'alias.json'));
    const grants = [grant(project), grant(join(root, 'linking', 'dotfiles')), grant(join(root, 'linking', 'other'))];
    expect(grantExposures(linking, grants)).toEqual([
      { path: project, by: 'grant', of: 'symlink' },
      { path: join(root, 'linking', 'dotfiles'), by: 'grant', of: 'symlink' },
    ]);
    expect(grantExposureReason(linking, grantExposures(linking, [grant(project)]))).toBe(
      `grants "${project}", which contains a config file the config dir links to (symlink), and a contained launch that would show any of it is refused; grant narrower paths in the profile, or move the linked file out of the granted tree`,
    );
    const error = await compileContainment({ ...strict, filesystemPaths: [grant(project)] }, { file: NODE, args: [] }, { revision: 'sha256:r', platform: 'linux', probe: bwrapInstalled, configDir: linking, home }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { exposedBy: 'grant' } });
  });
});

describe('configDirWarnings (for switchyard check)', () => {
  it('warns about each entry that a contained launch would refuse, by key', () => {
    const servers = parseMcpServersFile(
      {
        mcpServers: {
          here: { command: 'node', args: [join(configDir, 'server.mjs')], cwd: '.' },
          fine: { command: 'node', args: [join(root, 'elsewhere', 'server.mjs')], cwd: join(root, 'elsewhere', 'work') },
          web: { url: 'https://example.com/mcp' },
        },
      },
      configDir,
    );
    const issues = configDirWarnings(configDir, servers, { home });
    expect(issues.map((i) => i.path)).toEqual(['mcpServers.here.args', 'mcpServers.here.cwd']);
    expect(issues[1]!.message).toContain(configDir);
    expect(issues[1]!.message).toContain('absolute "cwd" outside the config dir');
  });
});
