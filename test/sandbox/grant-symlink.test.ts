/**
 * Issue 13, finding 5: bwrap follows symlinks in a grant's source when it mounts it. An agent
 * with a read-write grant on `shared/` replaced `shared/public` with a symlink to a key
 * directory, and a second agent whose profile grants only `shared/public` read-only then read the
 * private key. Grants are now opened by the sidecar without following symlinks and mounted from
 * the descriptor (`--ro-bind-fd`), so a swap either makes the launch refuse (swapped before the
 * launch opened the source) or changes nothing (swapped after: the original directory is
 * mounted). Real bubblewrap, real processes, the real executor and compiler.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment, type ContainmentPolicy } from '../../sidecar/sandbox/index.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';
import { Figures } from '../resilience/figures.ts';

const NODE = process.execPath;
const KEY = 'PRIVATE KEY of the host user, never to be read';
const PUBLIC = 'public notes';
const READ = `
const fs = require('node:fs');
const dir = process.argv[1];
let out;
try { out = fs.readdirSync(dir).map((f) => f + '=' + fs.readFileSync(dir + '/' + f, 'utf8')).join(';'); } catch (e) { out = e.code; }
console.log(out);`;

const executor = new ProcessExecutor({ termGraceMs: 300 });
/** Counted with the resilience suite's totals: each swap an input tried. */
const figures = new Figures('sandbox-grants');
let root: string;
let shared: string;
let publicDir: string;
let keys: string;

/** Every test's root, all removed after the file: each test makes its own. */
const roots: string[] = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-grant-symlink-'));
  roots.push(root);
  shared = join(root, 'shared');
  publicDir = join(shared, 'public');
  keys = join(root, 'dot-ssh');
  mkdirSync(publicDir, { recursive: true });
  mkdirSync(keys);
  writeFileSync(join(publicDir, 'notes.txt'), PUBLIC);
  writeFileSync(join(keys, 'id_ed25519'), KEY, { mode: 0o600 });
});
afterAll(async () => {
  figures.report();
  await executor.disposeAll();
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

const writer = (): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: shared, targetPath: shared, accessMode: 'read-write' }], networkCapabilities: [] });
const reader = (): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: publicDir, targetPath: publicDir, accessMode: 'read-only' }], networkCapabilities: [] });

async function compile(effective: EffectiveProfile, args: string[]): Promise<ContainmentPolicy> {
  const policy = await compileContainment(effective, { file: NODE, args }, { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') });
  if (policy === null) throw new Error('expected a contained policy');
  return policy;
}

async function run(policy: ContainmentPolicy, args: string[]): Promise<string> {
  const handle = await executor.launch({ command: NODE, args, env: {}, policy });
  figures.sessions++;
  let stdout = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  await handle.dispose();
  return stdout.trim();
}

/** The first agent, contained with its read-write grant, swaps `public` for a symlink to the keys. */
async function swapFromInsideTheSandbox(): Promise<void> {
  const swap = `const fs = require('node:fs'); const [dir, target] = process.argv.slice(1);
fs.renameSync(dir, dir + '.orig'); fs.symlinkSync(target, dir); console.log('swapped');`;
  const args = ['-e', swap, publicDir, keys];
  expect(await run(await compile(writer(), args), args)).toBe('swapped');
  figures.inputs++;
  expect(readFileSync(join(publicDir, 'id_ed25519'), 'utf8')).toBe(KEY); // on the host, public now leads to the keys
}

describe('a grant cannot be redirected through a symlink', () => {
  it('reads the granted directory while it is one', async () => {
    const args = ['-e', READ, publicDir];
    expect(await run(await compile(reader(), args), args)).toBe(`notes.txt=${PUBLIC}`);
  });

  it('refuses the launch when the source was swapped for a symlink between compile and launch', async () => {
    const args = ['-e', READ, publicDir];
    const policy = await compile(reader(), args);
    await swapFromInsideTheSandbox();
    const spawned = executor.spawnCount;
    const error = await run(policy, args).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
    expect((error as WireError).message).not.toContain(root);
    expect(executor.spawnCount).toBe(spawned);
  });

  it('refuses to compile a grant whose source is a symlink', async () => {
    await swapFromInsideTheSandbox();
    const error = await compile(reader(), ['-e', READ, publicDir]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
  });

  it('mounts the directory it opened when the swap comes after the open: never the symlink target', async () => {
    const args = ['-e', READ, publicDir];
    const policy = await compile(reader(), args);
    const plan = policy.wrap(NODE, args); // the launch opens the grant sources here...
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
    expect({ code, stdout: stdout.trim() }).toEqual({ code: 0, stdout: `notes.txt=${PUBLIC}` });
    expect(stdout).not.toContain(KEY);
  });
});
