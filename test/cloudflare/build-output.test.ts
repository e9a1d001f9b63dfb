/**
 * dist/cloudflare/ is where users run wrangler: it gathers their `.dev.vars` (the worker config,
 * tokens' hashes and host keys included) and wrangler's local state, and the wrangler.jsonc they
 * edit. The package ships the two built files only, and a build keeps an edited wrangler.jsonc.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
// @ts-expect-error plain JS build script
import { buildCloudflareWorker, writeWranglerConfig } from '../../scripts/build.mjs';
// @ts-expect-error plain JS build script
import { wranglerTemplate } from '../../scripts/wrangler-template.mjs';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'switchyard-cloudflare-build-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function put(path: string, text = 'x'): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

/** What the build writes on stderr while `run` goes. */
async function stderrOf(run: () => unknown): Promise<string> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return written.join('');
}

describe('dist/cloudflare/ in the package', () => {
  it('ships worker.js and wrangler.jsonc, and none of what wrangler and the user leave beside them', async () => {
    // The package's own file list, packed from a copy whose dist/cloudflare/ is as a user leaves it.
    const pack = join(dir, 'pack');
    put(join(pack, 'bin', 'switchyard.mjs'));
    copyFileSync(join(ROOT, 'package.json'), join(pack, 'package.json'));
    for (const file of ['switchyard.js', 'sidecar.js', 'worker.js', 'deno-worker.js']) put(join(pack, 'dist', file));
    const cloudflare = join(pack, 'dist', 'cloudflare');
    for (const file of ['worker.js', 'wrangler.jsonc', '.dev.vars', 'wrangler.jsonc.new', '.wrangler.jsonc.sha256', '.wrangler/state/v3/do/switchyard-OAuthState/metadata.sqlite']) put(join(cloudflare, file));
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: pack });
    const files = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
    expect(files.filter((f) => f.startsWith('dist/cloudflare/')).sort()).toEqual(['dist/cloudflare/worker.js', 'dist/cloudflare/wrangler.jsonc']);
  }, 60_000);
});

describe('a build beside an edited wrangler.jsonc', () => {
  it('keeps the edits, writes a changed template to wrangler.jsonc.new and says so; replaces an unedited one quietly', async () => {
    const out = join(dir, 'edited');
    const config = join(out, 'wrangler.jsonc');
    expect(await stderrOf(() => buildCloudflareWorker({ minify: false, outdir: out }))).toBe('');
    expect(readFileSync(config, 'utf8')).toBe(wranglerTemplate());

    const edited = (wranglerTemplate() as string).replace('"name": "switchyard"', '"name": "my-yard"');
    writeFileSync(config, edited);
    // The same template again: the edits start from it, nothing to tell.
    expect(await stderrOf(() => buildCloudflareWorker({ minify: false, outdir: out }))).toBe('');
    expect(readFileSync(config, 'utf8')).toBe(edited);
    expect(existsSync(`${config}.new`)).toBe(false);

    // A build whose template changed: the edits stay where wrangler reads them.
    const next = `${wranglerTemplate()}// a later template\n`;
    const note = await stderrOf(() => writeWranglerConfig(out, next));
    expect(readFileSync(config, 'utf8')).toBe(edited);
    expect(readFileSync(`${config}.new`, 'utf8')).toBe(next);
    expect(note).toMatch(/^note: .*wrangler\.jsonc differs from the template the build last wrote there, so it was kept with your edits; this build's template is .*wrangler\.jsonc\.new: /);

    // Taking the new template as it is makes the file the build's again.
    renameSync(`${config}.new`, config);
    expect(await stderrOf(() => buildCloudflareWorker({ minify: false, outdir: out }))).toBe('');
    expect(readFileSync(config, 'utf8')).toBe(wranglerTemplate());
    expect(existsSync(`${config}.new`)).toBe(false);
  }, 60_000);

  it('replaces a template an earlier build wrote before it kept a record, and keeps any other file it finds', async () => {
    // What builds wrote at commit 463476d, before the record and no_bundle.
    const earlier = (wranglerTemplate() as string)
      .replace(/\n {2}\/\/ worker\.js is already one minified file[^\n]*\n {2}"no_bundle": true,/, '')
      // Its first comment, before it said to send the config minified.
      .replace(/\/\/ Before the first deploy, send worker\.json minified[^\n]*\n\/\/ {3}node -e [^\n]*\n/, '// Before the first deploy: wrangler secret put SWITCHYARD_WORKER_CONFIG < worker.json\n');
    expect(earlier).not.toContain('no_bundle');
    const out = join(dir, 'unrecorded');
    put(join(out, 'wrangler.jsonc'), earlier);
    expect(await stderrOf(() => writeWranglerConfig(out, wranglerTemplate()))).toBe('');
    expect(readFileSync(join(out, 'wrangler.jsonc'), 'utf8')).toBe(wranglerTemplate());

    const mine = join(dir, 'unrecorded-edited');
    put(join(mine, 'wrangler.jsonc'), earlier.replace('"name": "switchyard"', '"name": "my-yard"'));
    expect(await stderrOf(() => writeWranglerConfig(mine, wranglerTemplate()))).toMatch(/^note: /);
    expect(readFileSync(join(mine, 'wrangler.jsonc'), 'utf8')).toContain('"name": "my-yard"');
  });
});
