/**
 * `dist/worker.js` as users deploy it: one neutral ESM file, run by `deno serve` unchanged, with
 * an agent reaching an edge-direct server through it (so the bundle's trimmed zod is exercised,
 * not just loaded) and the status page served from its deflated assets.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { buildWorker, withoutDescriptions } from '../scripts/build.mjs';
import { sha256Hex } from '../worker/auth/agent-auth.ts';
import { closeClient, connectClient } from './support/clients.ts';
import { DENO } from './support/paths.ts';
import { ProcessSet, startEverythingHttp, waitForOutput } from './support/processes.ts';

const procs = new ProcessSet();
const out = mkdtempSync(join(tmpdir(), 'switchyard-bundle-'));
afterAll(async () => {
  await procs.stopAll();
  rmSync(out, { recursive: true, force: true });
});

describe('dist/worker.js', () => {
  it('is one neutral ESM file with no node: import that `deno serve` runs unchanged', async () => {
    const outfile = join(out, 'worker.js');
    await buildWorker({ outfile });
    const code = readFileSync(outfile, 'utf8');
    expect(code).not.toMatch(/from\s*["']node:|require\(["']node:/);
    expect(code).not.toMatch(/\bimport\s*\(\s*["'](?!data:)[^"']+["']\s*\)/);
    // The config schemas' descriptions are for npm run docs only; their English error messages stay.
    expect(code).not.toContain('Agent name, shown in logs');
    expect(code).toContain('Invalid input');
    process.stdout.write(`dist/worker.js: ${(code.length / 1024).toFixed(1)} KiB minified, ${(gzipSync(code).length / 1024).toFixed(1)} KiB gzipped\n`);

    const everything = await startEverythingHttp(procs);
    const config = {
      agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['everything'] }],
      servers: { everything: { executor: { type: 'http', url: everything.url } } },
    };
    const proc = procs.spawn(DENO, ['serve', '--allow-net', '--allow-env', '--host', '127.0.0.1', '--port', '0', outfile], {
      SWITCHYARD_WORKER_CONFIG: JSON.stringify(config),
    });
    const [, url] = await waitForOutput(proc, () => proc.stdout() + proc.stderr(), /Listening on (http:\/\/[^\s/]+)/, 'deno serve dist/worker.js');

    const direct = await connectClient(`${url}/servers/everything/mcp`, 'alice-token');
    expect(await direct.callTool({ name: 'echo', arguments: { message: 'bundled' } })).toMatchObject({ content: [{ type: 'text', text: 'Echo: bundled' }] });
    await closeClient(direct);

    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('.sign-in-card{');
    expect(html).toContain('switchyard.status.token');

    const aggregate = await connectClient(`${url}/mcp`, 'alice-token');
    const structured = await aggregate.callTool({ name: 'everything__get-structured-content', arguments: { location: 'New York' } });
    expect(structured.structuredContent).toBeDefined();
    await closeClient(aggregate);
  }, 120_000);

  it('drops literal z.describe and z.meta checks from their check lists, whatever their quotes, escapes and line breaks', () => {
    const cut = withoutDescriptions as (source: string) => string;
    expect(cut(`a.check(z.describe('it\\'s "x"'), z.maxLength(3))`)).toBe(`a.check(z.maxLength(3))`);
    expect(cut('s.check(\n  z.describe(\n    "two\\nlines",\n  ),\n).parse(v)')).toBe('s.parse(v)');
    expect(cut(`z.optional(s).check(z.describe('only'))`)).toBe(`z.optional(s)`);
    expect(cut(`s.check(\n  z.refine(f, 'm'),\n  z.describe('last'),\n)`)).toBe(`s.check(\n  z.refine(f, 'm'),\n)`);
    expect(cut(`s.check(z.meta({ default: false }), z.describe('both'))`)).toBe(`s`);
    expect(cut(`s.check(z.refine(f), z.meta({ default: false }), z.describe('x'))`)).toBe(`s.check(z.refine(f))`);
    expect(cut(`s.check(z.meta({ default: false }), z.refine(f))`)).toBe(`s.check(z.refine(f))`);
    // A note that is no flat literal without strings stays, as does a description made at run time.
    expect(cut(`s.check(z.meta({ a: 'x' }), z.refine(f))`)).toBe(`s.check(z.meta({ a: 'x' }), z.refine(f))`);
    expect(cut('s.check(z.describe(`plain`)) s.check(z.describe(`${name} kept`))')).toBe('s s.check(z.describe(`${name} kept`))');
    expect(cut(`s.check(z.describe('a' + b))`)).toBe(`s.check(z.describe('a' + b))`);
    // Not in a place it knows: kept, with its text emptied.
    expect(cut(`const d = z.describe('x');`)).toBe(`const d = z.describe('');`);
  });
});
