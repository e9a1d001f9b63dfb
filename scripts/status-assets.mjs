#!/usr/bin/env node
/**
 * Turns the status page's real asset files (worker/status/assets/: its script and stylesheet, the
 * consent pages' stylesheet, and both pages' markup as templates) into the string module the worker imports, worker/status/status-page-assets.generated.ts, minified by
 * esbuild's transform (whitespace, comments and local names only; no syntax is lowered: the files
 * are plain ES2020 and CSS as browsers take them), which halves what they cost the worker bundle
 * (issue 17) while the files keep their comments; then deflated together (zlib format, one text,
 * so they share one dictionary) and written as Z85 (5 characters for 4 bytes, where base64 takes
 * 4 for 3), which halves them again: worker/status/status-page-assets.ts inflates them once, with the web-standard
 * DecompressionStream, when a page first needs them. The module
 * is committed, because the worker also runs from its sources (Deno runs worker/adapters/deno/deno-worker.ts,
 * tests import sources) where no build step runs; `npm run build` regenerates it, and
 * worker/status/status-page-assets.test.ts fails when it is stale.
 *
 * `node scripts/status-assets.mjs` writes it; `--check` only says whether it is current (exit 1 if not).
 */
import { transformSync } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { deflateSync, inflateSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const GENERATED = join(root, 'worker', 'status', 'status-page-assets.generated.ts');
/**
 * Z85 (ZeroMQ RFC 32), the text the deflated bytes are written as: 85 characters that need no
 * escape in a JS string, 5 for each 4 bytes, the last group padded with zero bytes (the module
 * says how many bytes there are). worker/status/status-page-assets.ts reads it.
 */
const Z85 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';

export function encodeZ85(bytes) {
  const padded = Buffer.alloc(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  let text = '';
  for (let i = 0; i < padded.length; i += 4) {
    let value = padded.readUInt32BE(i);
    let group = '';
    for (let j = 0; j < 5; j++, value = Math.floor(value / 85)) group = Z85[value % 85] + group;
    text += group;
  }
  return text;
}

export function decodeZ85(text, length) {
  const bytes = Buffer.alloc((text.length / 5) * 4);
  for (let i = 0; i < text.length; i += 5) {
    let value = 0;
    for (let j = i; j < i + 5; j++) value = value * 85 + Z85.indexOf(text[j]);
    bytes.writeUInt32BE(value, (i / 5) * 4);
  }
  return bytes.subarray(0, length);
}

/** Between the assets' texts, in the one deflated text that holds them all (they share its dictionary). */
const SEPARATOR = '\0';
const ASSETS = [
  { name: 'STATUS_PAGE_SCRIPT', file: 'worker/status/assets/status-page.js', closing: '</script', loader: 'js' },
  { name: 'STATUS_PAGE_CSS', file: 'worker/status/assets/status-page.css', closing: '</style', loader: 'css' },
  { name: 'CONSENT_PAGE_CSS', file: 'worker/status/assets/consent-page.css', closing: '</style', loader: 'css' },
  // The pages' markup, as templates with {{name}} placeholders (`fillTemplate` in worker/status/status-page-assets.ts): kept as written, only deflated.
  ...['page.html', 'logo.svg', 'status-page.html', 'consent-page.html', 'consent-client.html', 'consent-loopback-warning.html', 'consent-sign-in.html', 'consent-approve.html', 'consent-error.html'].map((file) => ({
    name: file,
    file: `worker/status/assets/${file}`,
    closing: undefined,
    loader: undefined,
  })),
];

/** `text` minified; esnext, so esbuild lowers nothing and the output uses only the syntax the file does. */
export function minifyAsset(text, loader) {
  return transformSync(text, { loader, minify: true, target: 'esnext', legalComments: 'none', charset: 'utf8' }).code.trimEnd();
}

/** Each asset's text as the page gets it (minified where it has a loader), checked for a closing tag. */
function assetTexts() {
  return ASSETS.map(({ name, file, closing, loader }) => {
    const source = readFileSync(join(root, file), 'utf8');
    // A file's final line break is its editor's, not the page's.
    const text = loader === undefined ? source.trimEnd() : minifyAsset(source, loader);
    // Inlined into the page's <script>/<style>: a closing tag inside would end the element early.
    if (closing !== undefined && text.toLowerCase().includes(closing)) throw new Error(`${file} contains "${closing}", which would end the page's element early: split the text`);
    if (text.includes(SEPARATOR)) throw new Error(`${file} contains a NUL character, which separates the assets in the deflated text`);
    return { name, file, loader, text };
  });
}

function joinedTexts() {
  return assetTexts().map(({ text }) => text).join(SEPARATOR);
}

/**
 * Whether the committed module holds the asset files as they are now, compared inflated: another
 * zlib (another Node) may deflate the same text to other bytes, which is no reason to call it stale.
 */
export function statusAssetsCurrent() {
  let module = '';
  try {
    module = readFileSync(GENERATED, 'utf8');
  } catch {
    return false;
  }
  const stored = /export const PAGE_ASSETS_DEFLATED = "([^"\\]*)";/.exec(module)?.[1];
  const length = /export const PAGE_ASSETS_BYTES = (\d+);/.exec(module)?.[1];
  if (stored === undefined || length === undefined) return false;
  try {
    return inflateSync(decodeZ85(stored, Number(length))).toString('utf8') === joinedTexts();
  } catch {
    return false;
  }
}

/** The module's text for the asset files as they are now. */
export function renderStatusAssets() {
  const lines = [
    '// Generated by scripts/status-assets.mjs from worker/status/assets/: do not edit.',
    '// Edit the asset files, then run npm run build (or node scripts/status-assets.mjs).',
    '',
  ];
  const deflated = deflateSync(Buffer.from(joinedTexts(), 'utf8'), { level: 9 });
  lines.push(
    '/**',
    ' * These asset files, in this order, joined by NUL characters, then deflated (zlib) and written as Z85:',
    ...assetTexts().map(({ file, loader }) => ` * - ${file}${loader === undefined ? '' : ', minified'}`),
    ' */',
    `export const PAGE_ASSETS_DEFLATED = ${JSON.stringify(encodeZ85(deflated))};`,
    '/** How many bytes PAGE_ASSETS_DEFLATED holds (its last group of 4 is padded with zeros). */',
    `export const PAGE_ASSETS_BYTES = ${deflated.length};`,
    '',
  );
  return lines.join('\n');
}

/** Writes the module when it differs; true when it did. */
export function writeStatusAssets() {
  if (statusAssetsCurrent()) return false;
  writeFileSync(GENERATED, renderStatusAssets());
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const stale = !statusAssetsCurrent();
    process.stdout.write(stale ? 'status-page-assets.generated.ts is stale: run node scripts/status-assets.mjs\n' : 'status-page-assets.generated.ts is current\n');
    process.exitCode = stale ? 1 : 0;
  } else {
    process.stdout.write(writeStatusAssets() ? 'status-page-assets.generated.ts written\n' : 'status-page-assets.generated.ts already current\n');
  }
}
