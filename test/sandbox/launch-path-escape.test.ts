/**
 * Security review, findings 1 and 6: a contained server with a read-write grant chose what the
 * sidecar runs or mounts next time.
 *
 * 1. The implicit launch roots (`launch-paths.ts`) came from the real path of the server's script
 *    and from walking up to a `package.json`, both inside the server's own grant: it replaced its
 *    script with a symlink through `/proc/self/cwd` (the sidecar's cwd, `$HOME` under a systemd
 *    user unit, on the host; its own cwd inside the sandbox) and its next session ran with
 *    `~/.ssh` mounted; or it deleted its `package.json` and the next session saw the whole
 *    monorepo around it.
 * 6. bwrap, slirp4netns, prlimit and setpriv were taken from the first `PATH` entry holding them,
 *    so a planted `bwrap` in a writable `PATH` entry ran unconfined.
 *
 * Real bubblewrap, real processes, the real compiler (with the config dir, as the sidecar always
 * compiles) and executor.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment, type ContainmentLaunch, type ContainmentPolicy } from '../../sidecar/sandbox/index.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';
import { REPO } from '../support/paths.ts';
import { unprivilegedUserNamespaces, unusedUid } from '../support/unprivileged-user.ts';

const NODE = process.execPath;
const KEY = '-----BEGIN OPENSSH PRIVATE KEY----- of the host user, never to be read';
const SETPRIV = '/usr/bin/setpriv';
const asRoot = process.getuid?.() === 0;
const linux = process.platform === 'linux' && existsSync('/usr/bin/bwrap');

const executor = new ProcessExecutor({ termGraceMs: 300 });
let root: string;
let home: string;
let configDir: string;
const sidecarCwd = process.cwd();

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-launch-escape-'));
  home = join(root, 'home', 'alice');
  configDir = join(home, '.config', 'switchyard');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_ed25519'), KEY, { mode: 0o600 });
});
afterEach(() => {
  process.chdir(sidecarCwd);
  rmSync(root, { recursive: true, force: true });
});
afterAll(() => executor.disposeAll());

const readWrite = (path: string): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: path, targetPath: path, accessMode: 'read-write' }], networkCapabilities: [] });

function compile(effective: EffectiveProfile, launch: ContainmentLaunch): Promise<ContainmentPolicy | null> {
  return compileContainment(effective, launch, { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap'), home, configDir });
}

/** One session: compile and run, as the host handler does for each. */
async function session(effective: EffectiveProfile, launch: ContainmentLaunch): Promise<string> {
  const policy = await compile(effective, launch);
  const handle = await executor.launch({ command: launch.file, args: launch.args, env: {}, policy, ...(launch.cwd ? { cwd: launch.cwd } : {}) });
  let out = '';
  handle.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  handle.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  await handle.dispose();
  return out.trim();
}

describe.runIf(linux)('a contained server cannot choose its next launch roots', () => {
  it('refuses the next launch of a server that made its script a symlink out of its grant, so the key stays unread', async () => {
    const project = join(home, 'project');
    const script = join(project, 'server.js');
    mkdirSync(project);
    // The first session is the server, contained, with read-write on its project only.
    const steal = `const fs = require('node:fs'); console.log('LEAKED:', fs.readFileSync(${JSON.stringify(join(home, '.ssh', 'id_ed25519'))}, 'utf8'))`;
    writeFileSync(
      script,
      `const fs = require('node:fs');
fs.mkdirSync(${JSON.stringify(join(project, '.ssh'))});
fs.writeFileSync(${JSON.stringify(join(project, '.ssh', 'id_ed25519'))}, ${JSON.stringify(steal)});
fs.unlinkSync(__filename);
fs.symlinkSync('/proc/self/cwd/.ssh/id_ed25519', __filename);
console.log('planted');`,
    );
    const launch = { file: NODE, args: [script], cwd: project };
    process.chdir(home);
    expect(await session(readWrite(project), launch)).toBe('planted');

    const spawned = executor.spawnCount;
    const error = await session(readWrite(project), launch).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { part: 'script' } });
    expect((error as WireError).message).toMatch(/^Cannot start contained process: its script lies in a path its trust profile grants and resolves to outside every grant/);
    expect((error as WireError).message).not.toContain(root);
    expect(executor.spawnCount).toBe(spawned);
  });

  it('starts a server whose script and cwd sit in its grant, as before', async () => {
    const project = join(root, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{}');
    writeFileSync(join(project, 'server.js'), `console.log(require('node:fs').readdirSync('.').sort().join(','))`);
    expect(await session(readWrite(project), { file: NODE, args: [join(project, 'server.js')], cwd: project })).toBe('package.json,server.js');
  });

  it('keeps the monorepo around a granted package unreadable after the server deletes its package.json', async () => {
    const mono = join(root, 'mono');
    const foo = join(mono, 'packages', 'foo');
    mkdirSync(foo, { recursive: true });
    writeFileSync(join(mono, 'package.json'), '{}');
    writeFileSync(join(mono, '.env'), 'DB_PASSWORD=hunter2');
    writeFileSync(join(foo, 'package.json'), '{}');
    writeFileSync(
      join(foo, 'server.cjs'),
      `const fs = require('node:fs');
try { console.log(fs.readFileSync(${JSON.stringify(join(mono, '.env'))}, 'utf8')) } catch (e) { console.log(e.code) }
fs.rmSync(${JSON.stringify(join(foo, 'package.json'))}, { force: true });`,
    );
    const launch = { file: NODE, args: [join(foo, 'server.cjs')], cwd: foo };
    expect(await session(readWrite(foo), launch)).toBe('ENOENT');
    expect(await session(readWrite(foo), launch)).toBe('ENOENT');
  });
});


// As a user other than root, the workstation case: root's own servers run as uid 0 and own what root owns.
describe.runIf(linux && existsSync('/usr/bin/slirp4netns') && unprivilegedUserNamespaces && (!asRoot || existsSync(SETPRIV)))('the tools a sidecar runs around its servers', () => {
  it('are not taken from a PATH entry its user can write, where a server could have planted them', async () => {
    const uid = unusedUid();
    const userHome = mkdtempSync(join(tmpdir(), 'sy-tools-user-home-'));
    try {
      const bin = join(userHome, '.local', 'bin');
      mkdirSync(bin, { recursive: true });
      for (const name of ['bwrap', 'slirp4netns', 'prlimit', 'setpriv']) writeFileSync(join(bin, name), `#!/bin/sh\necho unconfined > "${userHome}/ran"\nexec /usr/bin/true\n`, { mode: 0o755 });
      if (asRoot) for (const path of [userHome, join(userHome, '.local'), bin]) chownSync(path, uid, uid);
      const node = [NODE, '--import', 'tsx', join(REPO, 'test/sandbox/launch-path-escape-runner.ts')];
      const [file, ...args] = asRoot ? [SETPRIV, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', ...node] : node;
      const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: userHome, TMPDIR: userHome, TSX_DISABLE_CACHE: '1' };
      const { stdout } = await promisify(execFile)(file!, args, { cwd: REPO, env });
      const result = JSON.parse(stdout) as { uid: number; tools: Record<string, string | null>; launch: unknown };
      if (asRoot) expect(result.uid).toBe(uid);
      expect(result.tools).toEqual({ bwrap: '/usr/bin/bwrap', slirp4netns: '/usr/bin/slirp4netns', prlimit: '/usr/bin/prlimit', setpriv: '/usr/bin/setpriv' });
      expect(result.launch).toEqual({ code: 0, stdout: 'contained' });
      expect(existsSync(join(userHome, 'ran'))).toBe(false);
    } finally {
      rmSync(userHome, { recursive: true, force: true });
    }
  });
});
