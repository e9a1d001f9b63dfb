/**
 * Review finding 1, last variant: an implicit launch root (here the server's `cwd`, outside its
 * own grants) lies in a directory another profile's server may write. bwrap used to mount it by
 * path, so a swap for a symlink after the compile mounted whatever the symlink named. Launch
 * roots are now opened like grants and mounted from the descriptor (`--ro-bind-fd`): a swap before
 * the launch opens the root refuses it, a swap after changes nothing. Real bubblewrap, real
 * processes, the real executor and compiler.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment, type ContainmentPolicy } from '../../sidecar/sandbox/index.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';

const NODE = process.execPath;
const KEY = 'PRIVATE KEY of the host user, never to be read';
const TOOL = 'the install dir the admin put there';
const LIST = `
const fs = require('node:fs');
let out;
try { out = fs.readdirSync('.').map((f) => f + '=' + fs.readFileSync(f, 'utf8')).join(';'); } catch (e) { out = e.code; }
console.log(out);`;

const executor = new ProcessExecutor({ termGraceMs: 300 });
let root: string;
let shared: string;
let tool: string;
let keys: string;

const roots: string[] = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-launch-root-'));
  roots.push(root);
  shared = join(root, 'shared');
  tool = join(shared, 'tool');
  keys = join(root, 'dot-ssh');
  mkdirSync(tool, { recursive: true });
  mkdirSync(keys);
  writeFileSync(join(tool, 'notes.txt'), TOOL);
  writeFileSync(join(keys, 'id_ed25519'), KEY, { mode: 0o600 });
});
afterAll(async () => {
  await executor.disposeAll();
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

/** Another profile's server: it may write the shared dir. */
const writer = (): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: shared, targetPath: shared, accessMode: 'read-write' }], networkCapabilities: [] });
/** The server under test: no grant at all; its `cwd` is a launch root, read-only. */
const reader = (): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [], networkCapabilities: [] });

async function compile(effective: EffectiveProfile, args: string[], cwd?: string): Promise<ContainmentPolicy> {
  const launch = { file: NODE, args, ...(cwd !== undefined ? { cwd } : {}) };
  const policy = await compileContainment(effective, launch, { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') });
  if (policy === null) throw new Error('expected a contained policy');
  return policy;
}

async function run(policy: ContainmentPolicy, args: string[]): Promise<string> {
  const handle = await executor.launch({ command: NODE, args, env: {}, policy });
  let stdout = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  await handle.dispose();
  return stdout.trim();
}

/** The other profile's server, contained with its read-write grant, swaps `tool` for a symlink to the keys. */
async function swapFromInsideTheSandbox(): Promise<void> {
  const swap = `const fs = require('node:fs'); const [dir, target] = process.argv.slice(1);
fs.renameSync(dir, dir + '.orig'); fs.symlinkSync(target, dir); console.log('swapped');`;
  const args = ['-e', swap, tool, keys];
  expect(await run(await compile(writer(), args), args)).toBe('swapped');
  expect(readFileSync(join(tool, 'id_ed25519'), 'utf8')).toBe(KEY); // on the host, tool now leads to the keys
}

describe('an implicit launch root cannot be redirected through a symlink', () => {
  it('mounts the root from a descriptor and reads it while it is a directory', async () => {
    const args = ['-e', LIST];
    const policy = await compile(reader(), args, tool);
    if (policy.backend !== 'bubblewrap') throw new Error('expected a bubblewrap policy');
    expect(policy.launchRoots).toEqual([tool]);
    expect(policy.args.join(' ')).not.toContain(`--ro-bind ${tool} `);
    expect(await run(policy, args)).toBe(`notes.txt=${TOOL}`);
  });

  it('refuses the launch when the root was swapped for a symlink between compile and launch', async () => {
    const args = ['-e', LIST];
    const policy = await compile(reader(), args, tool);
    await swapFromInsideTheSandbox();
    const spawned = executor.spawnCount;
    const error = await run(policy, args).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
    expect((error as WireError).message).not.toContain(root);
    expect(executor.spawnCount).toBe(spawned);
  });

  it('mounts the directory it opened when the swap comes after the open: never the symlink target', async () => {
    const args = ['-e', LIST];
    const policy = await compile(reader(), args, tool);
    const plan = policy.wrap(NODE, args); // the launch opens the roots here...
    await swapFromInsideTheSandbox(); // ...the swap lands before bwrap mounts them
    const stdio: ('ignore' | 'pipe' | number)[] = ['ignore', 'pipe', 'pipe', ...(plan.descriptors ?? []).map((d) => (typeof d === 'object' && 'fd' in d ? d.fd : ('pipe' as const)))];
    const child = spawn(plan.file, plan.args, { env: { ...plan.env }, cwd: plan.cwd, stdio });
    plan.release?.();
    // As the executor does: bwrap reads its seccomp filter from a data pipe to its end.
    child.stdio.slice(3).forEach((extra, i) => {
      const d = plan.descriptors?.[i];
      if (typeof d === 'object' && 'data' in d) (extra as Writable).end(d.data);
      else (extra as Readable | null)?.resume();
    });
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect({ code, stdout: stdout.trim() }).toEqual({ code: 0, stdout: `notes.txt=${TOOL}` });
    expect(stdout).not.toContain(KEY);
  });
});
