/**
 * `dist/worker.js` as users deploy it: one neutral ESM file, run by `deno serve` unchanged, with
 * an agent reaching an edge-direct server through it (so the bundle's swapped JSON Schema
 * validator and trimmed zod are exercised, not just loaded).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { buildSidecar, buildWorker } from '../scripts/build.mjs';
import { sha256Hex } from '../worker/auth/agent-auth.ts';
import { closeClient, connectClient, DENO, ProcessSet, startEverythingHttp, waitForOutput } from './helpers/worker-processes.ts';

const procs = new ProcessSet();
const out = mkdtempSync(join(tmpdir(), 'switchyard-bundle-'));
afterAll(async () => {
  await procs.stopAll();
  rmSync(out, { recursive: true, force: true });
});

describe('dist/sidecar.js', () => {
  it('is one Node file that runs the CLI: profiles with their revisions, check with every problem', async () => {
    const outfile = join(out, 'sidecar.js');
    await buildSidecar({ outfile });
    const dir = join(out, 'cfg');
    mkdirSync(join(dir, 'trust-profiles'), { recursive: true });
    writeFileSync(join(dir, 'trust-profiles', 'workspace.json'), JSON.stringify({ 'network-capabilities': [] }));
    const listing = execFileSync(process.execPath, [outfile, 'sidecar', 'profiles', '--config-dir', dir], { encoding: 'utf8' });
    expect(listing).toMatch(/^workspace {2}sha256:[0-9a-f]{64}\n$/);
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'nope', 'entity-id': 'h' }));
    let report = '';
    try {
      execFileSync(process.execPath, [outfile, 'check', join(dir, 'sidecar.json')], { encoding: 'utf8' });
    } catch (error) {
      report = (error as { stdout: string }).stdout;
    }
    expect(report).toContain('worker: must be an absolute URL');
    expect(report).toContain('secret-file: ');
  }, 60_000);
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
