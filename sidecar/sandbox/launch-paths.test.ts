import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { launchPaths } from './launch-paths.ts';

let root: string;
let home: string;

function file(path: string, content = ''): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content);
  return path;
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-launch-'));
  home = join(root, 'home', 'alice');
  mkdirSync(home, { recursive: true });
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('launchPaths', () => {
  it('exposes the outermost node_modules for a script inside one', () => {
    const script = file(join(root, 'app', 'node_modules', '@scope', 'server', 'dist', 'index.js'));
    file(join(root, 'app', 'node_modules', '@scope', 'server', 'package.json'), '{}');
    expect(launchPaths({ file: '/usr/bin/node', args: [script, '/data'] }, home).readOnly).toContain(join(root, 'app', 'node_modules'));
  });

  it('exposes the nearest package.json ancestor of a script', () => {
    file(join(root, 'srv', 'package.json'), '{}');
    const script = file(join(root, 'srv', 'lib', 'bin', 'main.js'));
    expect(launchPaths({ file: '/usr/bin/node', args: [script] }, home).readOnly).toContain(join(root, 'srv'));
  });

  it('falls back to the containing directory of a loose script', () => {
    const script = file(join(root, 'loose', 'server.mjs'));
    expect(launchPaths({ file: '/usr/bin/node', args: [script] }, home).readOnly).toContain(join(root, 'loose'));
  });

  it('never exposes $HOME or an ancestor of it, even with a package.json there', () => {
    file(join(home, 'package.json'), '{}');
    file(join(root, 'home', 'package.json'), '{}');
    const direct = file(join(home, 'server.js'));
    const nested = file(join(home, 'tools', 'server.js'));
    const { readOnly } = launchPaths({ file: '/usr/bin/node', args: [direct, nested] }, home);
    expect(readOnly).toContain(direct);
    expect(readOnly).toContain(join(home, 'tools'));
    expect(readOnly).not.toContain(home);
    expect(readOnly).not.toContain(join(root, 'home'));
  });

  it('never exposes the real home behind a symlinked $HOME, nor its ancestors, for a script named by its real path (review s19)', () => {
    const real = join(root, 'var', 'home', 'alice');
    mkdirSync(real, { recursive: true });
    const link = join(root, 'home-link');
    symlinkSync(real, link);
    file(join(real, 'package.json'), '{}');
    const direct = file(join(real, 'server.js'));
    const { readOnly } = launchPaths({ file: '/usr/bin/node', args: [direct] }, link);
    expect(readOnly).toContain(direct);
    expect(readOnly).not.toContain(real);
    expect(readOnly).not.toContain(join(root, 'var', 'home'));
  });

  it('never exposes a shared temp dir wholesale', () => {
    const script = join(tmpdir(), `sy-loose-${process.pid}.mjs`);
    writeFileSync(script, '');
    try {
      expect(launchPaths({ file: '/usr/bin/node', args: [script] }, home).readOnly).toEqual(['/usr', script]);
    } finally {
      rmSync(script, { force: true });
    }
  });

  it('exposes nothing for data and config arguments, which need grants', () => {
    const script = file(join(root, 'srv', 'server.js'));
    const config = file(join(root, 'etc', 'server.json'));
    const key = file(join(home, '.ssh', 'id_ed25519'));
    const { readOnly } = launchPaths({ file: '/usr/bin/node', args: [script, '--config', config, key] }, home);
    expect(readOnly).toEqual(['/usr', join(root, 'srv')]);
  });

  it('ignores arguments that are not existing files', () => {
    mkdirSync(join(root, 'data'));
    const { readOnly } = launchPaths({ file: '/usr/bin/node', args: ['-e', '1', join(root, 'data'), join(root, 'missing.js')] }, home);
    expect(readOnly).toEqual(['/usr']);
  });

  it('exposes a node install prefix and both sides of a symlinked command', () => {
    const node = file(join(root, 'opt', 'node-v20', 'bin', 'node'));
    mkdirSync(join(root, 'bin'));
    symlinkSync(node, join(root, 'bin', 'node'));
    const { readOnly } = launchPaths({ file: join(root, 'bin', 'node'), args: [] }, home);
    expect(readOnly).toEqual([join(root, 'bin'), join(root, 'opt', 'node-v20')]);
  });

  it('exposes cwd, or creates it empty when it is $HOME', () => {
    mkdirSync(join(root, 'work'));
    expect(launchPaths({ file: '/usr/bin/node', args: [], cwd: join(root, 'work') }, home).readOnly).toContain(join(root, 'work'));
    expect(launchPaths({ file: '/usr/bin/node', args: [], cwd: home }, home)).toMatchObject({ readOnly: ['/usr'], emptyDirs: [home] });
  });

  it('says which part of the launch each root is for', () => {
    file(join(root, 'srv', 'package.json'), '{}');
    const script = file(join(root, 'srv', 'main.js'));
    mkdirSync(join(root, 'work'));
    const { roots } = launchPaths({ file: '/usr/bin/node', args: [script], cwd: join(root, 'work') }, home);
    expect(roots).toEqual(expect.arrayContaining([{ path: join(root, 'srv'), for: 'script' }, { path: join(root, 'work'), for: 'cwd' }, { path: '/usr', for: 'command' }]));
  });
});

describe('launchPaths under grants, whose contents the contained server decides', () => {
  const grant = (sourcePath: string) => ({ sourcePath });
  const refusal = (run: () => unknown): WireError => {
    try {
      run();
    } catch (error) {
      return error as WireError;
    }
    throw new Error('expected a refusal');
  };

  it('adds no root for a script, command or cwd inside a grant, nor walks above the grant source', () => {
    const mono = join(root, 'mono');
    const foo = join(mono, 'packages', 'foo');
    file(join(mono, 'package.json'), '{}');
    file(join(mono, '.env'), 'SECRET=1');
    const script = file(join(foo, 'server.cjs'));
    const node = file(join(foo, 'bin', 'node'));
    const launch = { file: node, args: [script], cwd: foo };
    // The server deleted foo/package.json: before, the walk went on to expose all of mono.
    expect(launchPaths(launch, home, [grant(foo)])).toEqual({ readOnly: [], emptyDirs: [], roots: [] });
    file(join(foo, 'package.json'), '{}');
    expect(launchPaths(launch, home, [grant(foo)]).readOnly).toEqual([]);
  });

  it('refuses a script inside a grant that the server made a symlink to a file outside every grant', () => {
    const project = join(root, 'project');
    file(join(home, '.ssh', 'id_ed25519'), 'KEY');
    mkdirSync(project);
    symlinkSync(join(home, '.ssh', 'id_ed25519'), join(project, 'server.js'));
    const error = refusal(() => launchPaths({ file: '/usr/bin/node', args: [join(project, 'server.js')], cwd: project }, home, [grant(project)]));
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { part: 'script' } });
    expect(error.message).toMatch(/^Cannot start contained process: its script lies in a path its trust profile grants and resolves to outside every grant/);
    expect(error.message).not.toContain(root);
    expect((error.cause as Error).message).toContain(join(home, '.ssh', 'id_ed25519'));
  });

  it('sees a symlink the server planted in a grant even where the path leaves the grant again', () => {
    const project = join(root, 'project');
    const secret = file(join(root, 'secrets', 'server.js'));
    mkdirSync(project);
    symlinkSync(join(root, 'secrets'), join(project, 'lib'));
    expect(refusal(() => launchPaths({ file: '/usr/bin/node', args: [join(project, 'lib', 'server.js')] }, home, [grant(project)])).reason).toBe('launch-failed');
    const outside = join(root, 'opt');
    mkdirSync(outside);
    symlinkSync(join(project, 'lib'), join(outside, 'srv'));
    const through = refusal(() => launchPaths({ file: '/usr/bin/node', args: [join(outside, 'srv', 'server.js')] }, home, [grant(project)]));
    expect(through.message).toMatch(/^Cannot start contained process: its script reaches a path its trust profile grants through a symlink/);
    expect(launchPaths({ file: '/usr/bin/node', args: [secret] }, home, [grant(project)]).readOnly).toEqual(['/usr', join(root, 'secrets')]);
  });

  it('refuses a cwd inside a grant that resolves outside it, and a command that does', () => {
    const project = join(root, 'project');
    mkdirSync(join(root, 'elsewhere'));
    mkdirSync(project);
    symlinkSync(join(root, 'elsewhere'), join(project, 'work'));
    expect(refusal(() => launchPaths({ file: '/usr/bin/node', args: [], cwd: join(project, 'work') }, home, [grant(project)])).detail).toEqual({ part: 'cwd' });
    const node = file(join(root, 'opt', 'node-v20', 'bin', 'node'));
    symlinkSync(node, join(project, 'node'));
    expect(refusal(() => launchPaths({ file: join(project, 'node'), args: [] }, home, [grant(project)])).detail).toEqual({ part: 'command' });
  });

  it('lets a path in a grant lead to another grant or into the system dirs every sandbox shows, as a venv interpreter does', () => {
    const project = join(root, 'project');
    const shared = join(root, 'shared');
    const lib = file(join(shared, 'lib.js'));
    mkdirSync(join(project, '.venv', 'bin'), { recursive: true });
    symlinkSync(lib, join(project, 'lib.js'));
    symlinkSync('/usr/bin/env', join(project, '.venv', 'bin', 'python'));
    const launch = { file: join(project, '.venv', 'bin', 'python'), args: [join(project, 'lib.js')] };
    expect(launchPaths(launch, home, [grant(project), grant(shared)]).readOnly).toEqual([]);
  });

  it('keeps the roots of a launch outside the grants as they were', () => {
    const project = join(root, 'project');
    mkdirSync(project);
    file(join(root, 'srv', 'package.json'), '{}');
    const script = file(join(root, 'srv', 'lib', 'main.js'));
    expect(launchPaths({ file: '/usr/bin/node', args: [script], cwd: project }, home, [grant(project)]).readOnly).toEqual(['/usr', join(root, 'srv')]);
  });
});
