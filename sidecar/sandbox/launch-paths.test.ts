import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
