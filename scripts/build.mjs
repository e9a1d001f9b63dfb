#!/usr/bin/env node
/**
 * Builds the shippable files, after regenerating the status page's asset module:
 * - dist/worker.js: one neutral ESM file for any web runtime (`deno serve dist/worker.js`).
 * - dist/cloudflare/worker.js + dist/cloudflare/wrangler.jsonc: the same app for Cloudflare Workers
 *   (worker/adapters/cloudflare/cloudflare-worker.ts: the edge worker and the HostLink and
 *   AgentSession Durable Objects), with a paste-ready wrangler config (scripts/wrangler-template.mjs),
 *   which a later build never overwrites once it is edited (`writeWranglerConfig`).
 * - dist/sidecar.js: the one Node ESM file a workstation installs, built from the workstation
 *   entry (cli/sidecar-main.ts: sidecar, sidecar profiles, doctor); it holds no worker code.
 * - dist/switchyard.js: the full CLI (cli/main.ts), which the package's `switchyard` bin runs when built.
 * - dist/deno-worker.js: the `deno run` entry `switchyard worker` starts in the published package,
 *   which ships no TypeScript: Deno refuses to strip types from files under node_modules.
 */
import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, relative } from 'node:path';
import { writeStatusAssets } from './status-assets.mjs';
import { wranglerTemplate } from './wrangler-template.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
mkdirSync(dist, { recursive: true });

/**
 * zod re-exports all ~50 of its message locales through one namespace that zod classic (the MCP
 * SDK's `types.js`, which the Node bundles hold) keeps alive, about 250 KB of a bundle; Switchyard
 * speaks English only, so the namespace is cut down to `en`, a virtual module (no file of the repo,
 * so dist/sidecar.js holds no file of worker/). Our own schemas are zod/mini, whose namespace
 * esbuild drops by itself; their English comes from shared/zod.ts.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer) ? { path: 'en', namespace: 'zod-english-only' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, () => ({
      contents: "export { default as en } from 'zod/v4/locales/en.js';",
      resolveDir: root,
      loader: 'js',
    }));
  },
};

/**
 * The schemas' `z.describe('…')` texts and `z.meta({…})` notes are what `npm run docs` turns into
 * the README's config reference, from the sources; nothing in a running worker reads them, so the
 * worker bundles hold none (issue 17). Each is a check that checks nothing, and a check goes only
 * in a check list (`.check(…)`): one with a literal text (a flat object literal for `z.meta`) is
 * dropped from its list, and a `.check(…)` of them alone goes with it (each was a clone of the
 * schema, with a no-op check run on every parse). A call whose argument is not such a literal
 * keeps it; a literal description in a place these patterns do not know is kept with its text
 * emptied.
 */
const LITERAL = String.raw`(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\`(?:[^\`\\$]|\\.|\$(?!\{))*\`)`;
const DESCRIBE = String.raw`z\.describe\(\s*${LITERAL}\s*,?\s*\)`;
const DOC = String.raw`(?:${DESCRIBE}|z\.meta\(\s*\{[^{}()'"\`]*\}\s*,?\s*\))`;
const DESCRIPTION_CUTS = [
  // `.check(z.describe('…'))`, `.check(z.meta({…}), z.describe('…'))`: the whole call.
  [new RegExp(String.raw`\.check\(\s*(?:${DOC}\s*,\s*)*${DOC}\s*,?\s*\)`, 'g'), ''],
  // `.check(z.describe('…'), other)`: the first of several.
  [new RegExp(String.raw`(\.check\(\s*)(?:${DOC}\s*,\s*)+`, 'g'), '$1'],
  // `.check(other, z.describe('…'))`: the last of several.
  [new RegExp(String.raw`(?:,\s*${DOC})+(?=\s*,?\s*\))`, 'g'), ''],
  [new RegExp(DESCRIBE, 'g'), "z.describe('')"],
];

export function withoutDescriptions(source) {
  return DESCRIPTION_CUTS.reduce((text, [pattern, replacement]) => text.replace(pattern, replacement), source);
}

const noDescriptions = {
  name: 'no-descriptions',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) =>
      /^(worker|shared)[\\/]/.test(relative(root, args.path)) ? { contents: withoutDescriptions(readFileSync(args.path, 'utf8')), loader: 'ts' } : undefined,
    );
  },
};

export async function buildWorker({ minify = true, outfile = join(dist, 'worker.js'), entry = 'worker/adapters/deno/deno-serve.ts' } = {}) {
  const result = await build({
    entryPoints: [join(root, entry)],
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
    plugins: [zodEnglishOnly, noDescriptions],
    logLevel: 'warning',
  });
  return result;
}

/**
 * dist/cloudflare/: the Workers bundle and its wrangler.jsonc, for `wrangler deploy`. The
 * directory is never emptied: it is where users run wrangler, so it holds their `.dev.vars` and
 * wrangler's local state (package.json's "files" names the two built files, so neither ships).
 */
export async function buildCloudflareWorker({ minify = true, outdir = join(dist, 'cloudflare') } = {}) {
  mkdirSync(outdir, { recursive: true });
  const result = await buildWorker({ minify, outfile: join(outdir, 'worker.js'), entry: 'worker/adapters/cloudflare/cloudflare-worker.ts' });
  writeWranglerConfig(outdir, wranglerTemplate());
  return result;
}

/** Where the build records the sha-256 of the wrangler.jsonc it last generated. */
const WRANGLER_RECORD = '.wrangler.jsonc.sha256';

/**
 * The sha-256 of every template a build wrote before builds kept the record: a checkout built
 * then holds one of them, which is no edit, and must not be kept forever (the package would
 * ship it). Later templates are known by the record alone, so the list never grows.
 */
const UNRECORDED_TEMPLATES = new Set([
  'fd52393cfe139a2a599411c43e128be86e88a4fb2ed379cbf24c87898e9d9174',
  '639e11c5fd0e95d2a4b59ccf6caed43a33ef53d0c3aea6498f55dcffc2200363',
  'c4009a88c8561f9300653c231fd98db219c946a9b0991aaadfb4c9f31de138b2',
  'bf98703c0a8d929dd7a1881f033f2cba45ea674dbca40dcb31ad604b88af2cae',
  '2484cd0ec46d8ad8db5f629844f6ea9962fb92700b76c5e451165f2d761a3ffb',
  '8136d0416c128ab277b111d09623f41ce212df204f6036529d75a00a7fd28eae',
]);

/**
 * Writes wrangler.jsonc without eating a user's edits, as `switchyard start` treats its generated
 * files (cli/generated-file.ts): users must edit this one (the worker's name, routes, account),
 * and a build that replaced it would have the next deploy go to another worker. The sha-256 of
 * each template written is recorded beside it; a wrangler.jsonc that holds the last one is
 * replaced quietly, anything else (an edit, or a file from before the record) is kept and a
 * template that changed since goes to wrangler.jsonc.new, with one line on stderr. Keeping the edited file, where
 * start renames it aside, is the difference: wrangler reads this one when it deploys.
 *
 * @returns `written`, or `kept` (a changed template is then in wrangler.jsonc.new).
 */
export function writeWranglerConfig(outdir, text) {
  const file = join(outdir, 'wrangler.jsonc');
  const fresh = `${file}.new`;
  const record = join(outdir, WRANGLER_RECORD);
  const existing = readIfFile(file);
  const generated = readIfFile(record)?.trim();
  const unedited = existing === undefined || existing === text || sha256(existing) === generated || (generated === undefined && UNRECORDED_TEMPLATES.has(sha256(existing)));
  if (unedited) {
    writeFileSync(file, text);
    writeFileSync(record, `${sha256(text)}\n`);
    rmSync(fresh, { force: true });
    return 'written';
  }
  // The template is what the last build wrote: the edits already start from it, nothing to carry over.
  if (sha256(text) === generated) return 'kept';
  writeFileSync(fresh, text);
  writeFileSync(record, `${sha256(text)}\n`);
  process.stderr.write(
    `note: ${relative(process.cwd(), file) || file} differs from the template the build last wrote there, so it was kept with your edits; ` +
      `this build's template is ${relative(process.cwd(), fresh) || fresh}: carry over what changed (diff the two), or move it over wrangler.jsonc to drop your edits\n`,
  );
  return 'kept';
}

function sha256(text) {
  return createHash('sha256').update(text).digest('hex');
}

/** The file's text, or undefined when there is none. */
function readIfFile(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * One self-contained Node ESM file from a CLI entry; the result carries esbuild's metafile.
 * Whitespace and syntax are minified, identifiers are not (stack traces keep their names): V8 holds
 * a module's whole source for as long as it runs, and kept comments carried a few non-Latin-1
 * characters (`—`, `→`), which made that string two bytes a character, 3.5 MB of the idle
 * sidecar's heap; minified it is ASCII and 1.2 MB (issue 17).
 */
function buildNodeCli(entry, outfile, { sourcemap = false } = {}) {
  return build({
    sourcemap,
    entryPoints: [join(root, entry)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['bufferutil', 'utf-8-validate', 'deno', 'playwright-core'],
    minifyWhitespace: true,
    minifySyntax: true,
    plugins: [zodEnglishOnly],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    metafile: true,
    logLevel: 'warning',
  });
}

/** dist/sidecar.js: the workstation's commands only; `sourcemap` for profiling it (`test/bench/sidecar-cpu.ts`). */
export function buildSidecar({ outfile = join(dist, 'sidecar.js'), sourcemap = false } = {}) {
  return buildNodeCli('cli/sidecar-main.ts', outfile, { sourcemap });
}

/** dist/switchyard.js: every command. */
export function buildCli({ outfile = join(dist, 'switchyard.js') } = {}) {
  return buildNodeCli('cli/main.ts', outfile);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (writeStatusAssets()) console.log('worker/status/status-page-assets.generated.ts regenerated');
  const worker = await buildWorker();
  await buildWorker({ entry: 'worker/adapters/deno/deno-worker.ts', outfile: join(dist, 'deno-worker.js') });
  await buildCloudflareWorker();
  await buildSidecar();
  await buildCli();
  const code = readFileSync(join(dist, 'worker.js'));
  const sizes = { minified: code.length, gzipped: gzipSync(code).length };
  writeFileSync(join(dist, 'worker.meta.json'), JSON.stringify(worker.metafile));
  console.log(`dist/worker.js  ${(sizes.minified / 1024).toFixed(1)} KiB minified, ${(sizes.gzipped / 1024).toFixed(1)} KiB gzipped`);
  console.log(`dist/cloudflare/worker.js  ${(readFileSync(join(dist, 'cloudflare', 'worker.js')).length / 1024).toFixed(1)} KiB minified, with dist/cloudflare/wrangler.jsonc`);
  console.log(`dist/sidecar.js  ${(readFileSync(join(dist, 'sidecar.js')).length / 1024).toFixed(1)} KiB (workstation: sidecar, sidecar init, sidecar host-entry, sidecar profiles, doctor)`);
  console.log('dist/switchyard.js built (every command)');
}
