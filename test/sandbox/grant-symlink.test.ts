/**
 * Issue 13, finding 5: bwrap follows symlinks in a grant's source when it mounts it. An agent
 * with a read-write grant on `shared/` replaced `shared/public` with a symlink to a key
 * directory, and a second agent whose profile grants only `shared/public` read-only then read the
 * private key. Grants are now opened by the sidecar without following symlinks and mounted from
 * the descriptor (`--ro-bind-fd`), so a swap either makes the launch refuse (swapped before the
 * launch opened the source) or changes nothing (swapped after: the original directory is
 * mounted). Real bubblewrap, real processes, the real executor and compiler
 * (`symlink-swap-scene.ts`).
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import type { ContainmentPolicy } from '../../sidecar/sandbox/index.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';
import { Figures } from '../resilience/figures.ts';
import { compile, KEY, makeSwapScene, removeSwapScene, runContained, runPlanWith, swapFromInsideTheSandbox, type SwapScene } from './symlink-swap-scene.ts';

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
/** Every test's scene, all removed after the file: each test makes its own. */
const scenes: SwapScene[] = [];
let scene: SwapScene;

beforeEach(() => {
  scene = makeSwapScene('sy-grant-symlink-', 'public', PUBLIC);
  scenes.push(scene);
});
afterAll(async () => {
  figures.report();
  await executor.disposeAll();
  for (const each of scenes) removeSwapScene(each);
});

/** The second agent: only `shared/public`, read-only. */
const reader = (): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: scene.inner, targetPath: scene.inner, accessMode: 'read-only' }], networkCapabilities: [] });

function run(policy: ContainmentPolicy, args: string[]): Promise<string> {
  figures.sessions++;
  return runContained(executor, policy, args);
}

/** The first agent, contained with its read-write grant, swaps `public` for a symlink to the keys. */
async function swap(): Promise<void> {
  figures.sessions++;
  figures.inputs++;
  await swapFromInsideTheSandbox(executor, scene);
}

describe('a grant cannot be redirected through a symlink', () => {
  it('reads the granted directory while it is one', async () => {
    const args = ['-e', READ, scene.inner];
    expect(await run(await compile(reader(), args), args)).toBe(`notes.txt=${PUBLIC}`);
  });

  it('refuses the launch when the source was swapped for a symlink between compile and launch', async () => {
    const args = ['-e', READ, scene.inner];
    const policy = await compile(reader(), args);
    await swap();
    const spawned = executor.spawnCount;
    const error = await run(policy, args).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
    expect((error as WireError).message).not.toContain(scene.root);
    expect(executor.spawnCount).toBe(spawned);
  });

  it('refuses to compile a grant whose source is a symlink', async () => {
    await swap();
    const error = await compile(reader(), ['-e', READ, scene.inner]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
  });

  it('mounts the directory it opened when the swap comes after the open: never the symlink target', async () => {
    const args = ['-e', READ, scene.inner];
    const policy = await compile(reader(), args);
    const { code, stdout } = await runPlanWith(policy, args, swap);
    expect({ code, stdout }).toEqual({ code: 0, stdout: `notes.txt=${PUBLIC}` });
    expect(stdout).not.toContain(KEY);
  });
});
