/**
 * The sidecar the benchmark runs: `buildSidecar` from `scripts/build.mjs` (what `npm run build`
 * writes as `dist/sidecar.js`, the one file a workstation installs), built into the run's scratch
 * dir so that a concurrent `npm run build` is never disturbed.
 *
 * @module
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './processes.ts';

interface BuildModule {
  buildSidecar(options: { outfile?: string; sourcemap?: boolean }): Promise<unknown>;
}

/** Builds the sidecar bundle into `dir`; returns its path. `sourcemap` writes `sidecar.js.map` beside it (profiles). */
export async function buildSidecarBundle(dir: string, options: { sourcemap?: boolean } = {}): Promise<string> {
  const { buildSidecar } = (await import(pathToFileURL(join(REPO, 'scripts', 'build.mjs')).href)) as BuildModule;
  const outfile = join(dir, 'sidecar.js');
  await buildSidecar({ outfile, sourcemap: options.sourcemap === true });
  return outfile;
}
