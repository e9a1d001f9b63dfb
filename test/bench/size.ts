/**
 * Size of the worker bundle: `buildWorker` from `scripts/build.mjs` (the same esbuild settings
 * `npm run build` uses for `dist/worker.js`: neutral ESM, minified, ajv swapped for the edge
 * JSON-schema validator), written to a temporary file so a concurrent `npm run build` is never
 * disturbed, then measured raw and gzipped (level 9, what a CDN would serve at best).
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { REPO } from './processes.ts';

export interface SizeResult {
  minifiedBytes: number;
  gzippedBytes: number;
  /** The largest inputs by bytes in the output, for "what to cut next". */
  topInputs: Array<{ path: string; bytes: number }>;
}

interface BuildModule {
  buildWorker(options: { minify?: boolean; outfile?: string }): Promise<{ metafile?: { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> } }>;
}

export async function measureSize(): Promise<SizeResult> {
  const { buildWorker } = (await import(pathToFileURL(join(REPO, 'scripts', 'build.mjs')).href)) as BuildModule;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-size-'));
  try {
    const outfile = join(dir, 'worker.js');
    const result = await buildWorker({ minify: true, outfile });
    const code = readFileSync(outfile);
    const inputs = Object.values(result.metafile?.outputs ?? {}).flatMap((o) => Object.entries(o.inputs));
    const byPackage = new Map<string, number>();
    for (const [path, { bytesInOutput }] of inputs) {
      const key = packageOf(path);
      byPackage.set(key, (byPackage.get(key) ?? 0) + bytesInOutput);
    }
    const topInputs = [...byPackage].map(([path, bytes]) => ({ path, bytes })).sort((a, b) => b.bytes - a.bytes).slice(0, 6);
    return { minifiedBytes: code.length, gzippedBytes: gzipSync(code, { level: 9 }).length, topInputs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `node_modules/@scope/pkg/…` → `@scope/pkg`; project files → their top directory. */
function packageOf(path: string): string {
  const at = path.lastIndexOf('node_modules/');
  if (at === -1) return `${path.split('/')[0]}/ (project)`;
  const parts = path.slice(at + 'node_modules/'.length).split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}
