/**
 * `dist/worker.js` as users deploy it: one neutral ESM file, run by `deno serve` unchanged, with
 * an agent reaching an edge-direct server through it (so the bundle's swapped JSON Schema
 * validator and trimmed zod are exercised, not just loaded).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { buildWorker } from '../scripts/build.mjs';
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
    process.stdout.write(`dist/worker.js: ${(code.length / 1024).toFixed(1)} KB minified, ${(gzipSync(code).length / 1024).toFixed(1)} KB gzipped\n`);

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

    // The aggregate runs the SDK Client inside the bundle, whose output-schema checks use the swapped validator.
    const aggregate = await connectClient(`${url}/mcp`, 'alice-token');
    const structured = await aggregate.callTool({ name: 'everything__get-structured-content', arguments: { location: 'New York' } });
    expect(structured.structuredContent).toBeDefined();
    await closeClient(aggregate);
  }, 120_000);
});
