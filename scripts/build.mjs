#!/usr/bin/env node
/**
 * Builds the two shippable files:
 * - dist/worker.js: one neutral ESM file for any web runtime (`deno serve dist/worker.js`).
 *   The MCP SDK's Client/Server import ajv, which is large and compiles schemas with `new Function`
 *   (refused on edge runtimes); the bundle swaps it for the SDK's own @cfworker/json-schema provider.
 * - dist/sidecar.js: one Node ESM file with the CLI (`node dist/sidecar.js --help`).
 */
import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
mkdirSync(dist, { recursive: true });

/**
 * zod re-exports all ~50 of its message locales through one namespace the SDK keeps alive, about
 * 250 KB of the bundle; the worker speaks English only, so the namespace is cut down to `en`.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => {
      if (!/[\\/]zod[\\/]/.test(args.importer)) return undefined;
      return { path: join(root, 'worker', 'bundle', 'zod-locales-en.ts') };
    });
  },
};

const edgeJsonSchema = {
  name: 'edge-json-schema',
  setup(b) {
    b.onResolve({ filter: /validation\/ajv-provider\.js$/ }, () => ({
      path: join(root, 'worker', 'bundle', 'edge-json-schema-validator.ts'),
    }));
  },
};

export async function buildWorker({ minify = true, outfile = join(dist, 'worker.js') } = {}) {
  const result = await build({
    entryPoints: [join(root, 'worker/adapters/deno-serve.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['worker', 'browser', 'import', 'default'],
    minify,
    metafile: true,
    legalComments: 'none',
    plugins: [edgeJsonSchema, zodEnglishOnly],
    logLevel: 'warning',
  });
  return result;
}

export async function buildSidecar({ outfile = join(dist, 'sidecar.js') } = {}) {
  return build({
    entryPoints: [join(root, 'cli/main.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['bufferutil', 'utf-8-validate', 'deno', 'playwright-core'],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'warning',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const worker = await buildWorker();
  await buildSidecar();
  const code = readFileSync(join(dist, 'worker.js'));
  const sizes = { minified: code.length, gzipped: gzipSync(code).length };
  writeFileSync(join(dist, 'worker.meta.json'), JSON.stringify(worker.metafile));
  console.log(`dist/worker.js  ${(sizes.minified / 1024).toFixed(1)} KB minified, ${(sizes.gzipped / 1024).toFixed(1)} KB gzipped`);
  console.log('dist/sidecar.js built');
}
