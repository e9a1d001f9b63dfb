/**
 * The CLI bundled once per test file, for tests that run many short commands: started from
 * source each command costs about 1.3 s of `tsx` transforms, bundled about 0.3 s. Built from the
 * sources as they are (what `npm run build` makes `dist/switchyard.js` from) into files of its
 * own under `node_modules/.cache/`, inside the package, so it finds the package root (Deno, the
 * worker's sources) as the published CLI does, and never races a test that rebuilds `dist/`.
 * The runner beside the bundle starts it as `bin/switchyard.mjs` starts `dist/switchyard.js`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error plain JS build script
import { buildCli } from '../../scripts/build.mjs';

const ROOT = join(import.meta.dirname, '..', '..');
let built: Promise<{ dir: string; runner: string }> | undefined;

/** The path of a script that runs the bundled CLI with its arguments, built at the first call. */
export async function builtCli(): Promise<string> {
  built ??= (async () => {
    const cache = join(ROOT, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'switchyard-test-cli-'));
    await buildCli({ outfile: join(dir, 'switchyard.js') });
    const runner = join(dir, 'run.mjs');
    writeFileSync(runner, "const cli = await import('./switchyard.js');\ncli.runAsProcess(cli.main);\n");
    return { dir, runner };
  })();
  return (await built).runner;
}

/** Removes the bundle (a test file's `afterAll`). */
export async function removeBuiltCli(): Promise<void> {
  const made = await built?.catch(() => undefined);
  if (made !== undefined) rmSync(made.dir, { recursive: true, force: true });
  built = undefined;
}
