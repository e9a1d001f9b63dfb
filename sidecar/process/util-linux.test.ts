import { chmodSync, chownSync, existsSync, lchownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findHostTool, type ToolOwner, untrustedBecause } from './host-tool.ts';
import { findUtilLinuxTool } from './util-linux.ts';

const asRoot = process.getuid?.() === 0;
let dir: string;

/** A stand-in that leaves a mark when run: a tool the lookup refused must never run. */
function tool(at: string, name = 'setpriv'): string {
  mkdirSync(at, { recursive: true });
  const file = join(at, name);
  writeFileSync(file, `#!/bin/sh\ntouch "${at}/ran"\n`, { mode: 0o755 });
  return file;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'util-linux-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('findUtilLinuxTool', () => {
  it('finds the tool in the first absolute PATH entry that has it, never through a relative entry', () => {
    tool(dir);
    expect(findUtilLinuxTool('setpriv', { PATH: `${dir}:/usr/bin` }, 'linux')).toBe(join(dir, 'setpriv'));
    expect(findUtilLinuxTool('setpriv', { PATH: `${relative(process.cwd(), dir)}::/nonexistent` }, 'linux')).toBeNull();
    expect(findUtilLinuxTool('setpriv', { PATH: `${dir}` }, 'darwin')).toBeNull();
  });

  it('skips a tool in a directory a server could write, and takes the next trusted one', () => {
    const planted = join(dir, 'bin');
    tool(planted);
    chmodSync(planted, 0o777);
    expect(findUtilLinuxTool('setpriv', { PATH: `${planted}:/usr/bin` }, 'linux')).toBe('/usr/bin/setpriv');
    expect(findUtilLinuxTool('setpriv', { PATH: planted }, 'linux')).toBeNull();
  });
});

describe.runIf(process.platform === 'linux' && asRoot)('which tools the sidecar may run', () => {
  const root: ToolOwner = { uid: 0, home: '/nonexistent-home', writable: () => true };

  it('takes a root-owned tool whose way no one else can change, a sticky /tmp on the way included', () => {
    expect(untrustedBecause('/usr/bin/setpriv', root)).toBeUndefined();
    expect(untrustedBecause(tool(dir), root)).toBeUndefined();
  });

  it('refuses a tool, or a directory on its way, that its owner, its group or everyone else could change', () => {
    const file = tool(join(dir, 'bin'));
    chownSync(file, 61_000, 61_000);
    expect(untrustedBecause(file, root)).toBe(`"${file}" is owned by uid 61000, not root`);
    chownSync(file, 0, 0);
    chmodSync(file, 0o775);
    expect(untrustedBecause(file, root)).toBe(`"${file}" is writable by its group or by everyone`);
    chmodSync(file, 0o755);
    chmodSync(join(dir, 'bin'), 0o1777);
    expect(untrustedBecause(file, root)).toBeUndefined();
    chownSync(join(dir, 'bin'), 61_000, 61_000);
    expect(untrustedBecause(file, root)).toBe(`"${join(dir, 'bin')}" is owned by uid 61000, not root`);
  });

  it('follows each symlink where it lies, so a trusted link into a writable place is refused', () => {
    const writable = join(dir, 'writable');
    const target = tool(writable);
    chmodSync(writable, 0o777);
    mkdirSync(join(dir, 'bin'));
    symlinkSync(target, join(dir, 'bin', 'setpriv'));
    expect(untrustedBecause(join(dir, 'bin', 'setpriv'), root)).toBe(`"${writable}" is writable by its group or by everyone`);
    symlinkSync('/usr/bin/setpriv', join(dir, 'bin', 'prlimit'));
    expect(untrustedBecause(join(dir, 'bin', 'prlimit'), root)).toBeUndefined();
    // In a sticky folder anyone may make a link only its owner can repoint: it counts only when root owns it.
    const sticky = join(dir, 'sticky');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    symlinkSync('/usr/bin/setpriv', join(sticky, 'setpriv'));
    expect(untrustedBecause(join(sticky, 'setpriv'), root)).toBeUndefined();
    lchownSync(join(sticky, 'setpriv'), 61_000, 61_000);
    expect(untrustedBecause(join(sticky, 'setpriv'), root)).toBe(`"${join(sticky, 'setpriv')}" is a symlink owned by uid 61000, who can point it elsewhere`);
  });

  it('refuses, for a sidecar that is not root, what that user may write although root owns it (groups, ACLs)', () => {
    const file = tool(join(dir, 'bin'));
    const user: ToolOwner = { uid: 61_000, home: '/nonexistent-home', writable: (path) => path === join(dir, 'bin') };
    expect(untrustedBecause(file, user)).toBe(`"${join(dir, 'bin')}" is writable by this user`);
    expect(untrustedBecause('/usr/bin/setpriv', user)).toBeUndefined();
  });

  it('refuses, for a root sidecar, tools in $HOME or a node_modules tree, which its servers may be granted as root', () => {
    const file = tool(join(dir, 'home', '.local', 'bin'));
    expect(untrustedBecause(file, { ...root, home: join(dir, 'home') })).toBe(`"${file}" is in $HOME, which a root sidecar's servers may be granted`);
    const bin = tool(join(dir, 'project', 'node_modules', '.bin'));
    expect(untrustedBecause(bin, root)).toBe(`"${bin}" is in a node_modules tree, which a root sidecar's servers may be granted`);
  });

  it('reports what it refused on the way to the tool it takes, and runs none of them', () => {
    const planted = join(dir, 'bin');
    const file = tool(planted);
    chmodSync(planted, 0o777);
    expect(findHostTool('setpriv', `${planted}:/usr/bin`, root)).toEqual({ path: '/usr/bin/setpriv', refused: [{ file, why: `"${planted}" is writable by its group or by everyone` }] });
    expect(existsSync(join(planted, 'ran'))).toBe(false);
  });
});
