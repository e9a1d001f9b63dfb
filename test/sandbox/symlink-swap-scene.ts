/**
 * The scene of the sandbox's symlink-swap tests (`grant-symlink`, `launch-root-descriptors`): a
 * folder `shared/` another profile's server may write, a directory inside it that the server
 * under test reads, and beside them a folder of keys it must never read. The writer, contained
 * with its read-write grant, swaps that directory for a symlink to the keys from inside its
 * sandbox, as a hostile server would. Real bubblewrap, the real executor and compiler.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment, type ContainmentPolicy } from '../../sidecar/sandbox/index.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';

export const NODE = process.execPath;
export const KEY = 'PRIVATE KEY of the host user, never to be read';

export interface SwapScene {
  root: string;
  shared: string;
  /** The directory the server under test reads, inside `shared`, holding `notes.txt`. */
  inner: string;
  keys: string;
}

/** A new scene under a temporary root: `shared/<inner>/notes.txt` holding `notes`, and `dot-ssh/id_ed25519`. */
export function makeSwapScene(prefix: string, inner: string, notes: string): SwapScene {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const shared = join(root, 'shared');
  const scene = { root, shared, inner: join(shared, inner), keys: join(root, 'dot-ssh') };
  mkdirSync(scene.inner, { recursive: true });
  mkdirSync(scene.keys);
  writeFileSync(join(scene.inner, 'notes.txt'), notes);
  writeFileSync(join(scene.keys, 'id_ed25519'), KEY, { mode: 0o600 });
  return scene;
}

export function removeSwapScene(scene: SwapScene): void {
  rmSync(scene.root, { recursive: true, force: true });
}

/** Another profile's server: it may write the shared dir. */
export const writerOf = (scene: SwapScene): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: scene.shared, targetPath: scene.shared, accessMode: 'read-write' }], networkCapabilities: [] });

export async function compile(effective: EffectiveProfile, args: string[], cwd?: string): Promise<ContainmentPolicy> {
  const launch = { file: NODE, args, ...(cwd !== undefined ? { cwd } : {}) };
  const policy = await compileContainment(effective, launch, { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') });
  if (policy === null) throw new Error('expected a contained policy');
  return policy;
}

/** Runs node contained under `policy` through `executor`; its stdout, trimmed. */
export async function runContained(executor: ProcessExecutor, policy: ContainmentPolicy, args: string[]): Promise<string> {
  const handle = await executor.launch({ command: NODE, args, env: {}, policy });
  let stdout = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  await handle.dispose();
  return stdout.trim();
}

/** The writer swaps the scene's inner directory for a symlink to the keys, from inside its sandbox. */
export async function swapFromInsideTheSandbox(executor: ProcessExecutor, scene: SwapScene): Promise<void> {
  const swap = `const fs = require('node:fs'); const [dir, target] = process.argv.slice(1);
fs.renameSync(dir, dir + '.orig'); fs.symlinkSync(target, dir); console.log('swapped');`;
  const args = ['-e', swap, scene.inner, scene.keys];
  expect(await runContained(executor, await compile(writerOf(scene), args), args)).toBe('swapped');
  expect(readFileSync(join(scene.inner, 'id_ed25519'), 'utf8')).toBe(KEY); // on the host, the directory now leads to the keys
}

/**
 * Runs `policy`'s plan by hand, as the executor does, but with `between` run after the plan opened
 * its descriptors and before bwrap mounts them: its exit code and stdout.
 */
export async function runPlanWith(policy: ContainmentPolicy, args: string[], between: () => Promise<void>): Promise<{ code: unknown; stdout: string }> {
  const plan = policy.wrap(NODE, args); // the launch opens its sources here...
  await between(); // ...and this lands before bwrap mounts them
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
  return { code, stdout: stdout.trim() };
}
