/**
 * Review finding 1, last variant: an implicit launch root (here the server's `cwd`, outside its
 * own grants) lies in a directory another profile's server may write. bwrap used to mount it by
 * path, so a swap for a symlink after the compile mounted whatever the symlink named. Launch
 * roots are now opened like grants and mounted from the descriptor (`--ro-bind-fd`): a swap before
 * the launch opens the root refuses it, a swap after changes nothing. Real bubblewrap, real
 * processes, the real executor and compiler (`symlink-swap-scene.ts`).
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from '../../sidecar/trust/effective-profile.ts';
import { compile, KEY, makeSwapScene, removeSwapScene, runContained, runPlanWith, swapFromInsideTheSandbox, type SwapScene } from './symlink-swap-scene.ts';

const TOOL = 'the install dir the admin put there';
const LIST = `
const fs = require('node:fs');
let out;
try { out = fs.readdirSync('.').map((f) => f + '=' + fs.readFileSync(f, 'utf8')).join(';'); } catch (e) { out = e.code; }
console.log(out);`;

const executor = new ProcessExecutor({ termGraceMs: 300 });
/** Every test's scene, all removed after the file: each test makes its own. */
const scenes: SwapScene[] = [];
let scene: SwapScene;

beforeEach(() => {
  scene = makeSwapScene('sy-launch-root-', 'tool', TOOL);
  scenes.push(scene);
});
afterAll(async () => {
  await executor.disposeAll();
  for (const each of scenes) removeSwapScene(each);
});

/** The server under test: no grant at all; its `cwd` is a launch root, read-only. */
const reader = (): EffectiveProfile => ({ ...NEUTRAL_PROFILE, filesystemPaths: [], networkCapabilities: [] });

describe('an implicit launch root cannot be redirected through a symlink', () => {
  it('mounts the root from a descriptor and reads it while it is a directory', async () => {
    const args = ['-e', LIST];
    const policy = await compile(reader(), args, scene.inner);
    if (policy.backend !== 'bubblewrap') throw new Error('expected a bubblewrap policy');
    expect(policy.launchRoots).toEqual([scene.inner]);
    expect(policy.args.join(' ')).not.toContain(`--ro-bind ${scene.inner} `);
    expect(await runContained(executor, policy, args)).toBe(`notes.txt=${TOOL}`);
  });

  it('refuses the launch when the root was swapped for a symlink between compile and launch', async () => {
    const args = ['-e', LIST];
    const policy = await compile(reader(), args, scene.inner);
    await swapFromInsideTheSandbox(executor, scene);
    const spawned = executor.spawnCount;
    const error = await runContained(executor, policy, args).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('launch-failed');
    expect((error as WireError).message).not.toContain(scene.root);
    expect(executor.spawnCount).toBe(spawned);
  });

  it('mounts the directory it opened when the swap comes after the open: never the symlink target', async () => {
    const args = ['-e', LIST];
    const policy = await compile(reader(), args, scene.inner);
    const { code, stdout } = await runPlanWith(policy, args, () => swapFromInsideTheSandbox(executor, scene));
    expect({ code, stdout }).toEqual({ code: 0, stdout: `notes.txt=${TOOL}` });
    expect(stdout).not.toContain(KEY);
  });
});
