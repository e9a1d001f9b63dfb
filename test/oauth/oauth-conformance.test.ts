/**
 * The official suite's authorization-server scenarios (`conformance authorization`, 0.2.0-alpha.12:
 * `authorization-server-metadata-endpoint`, `authorization-code-grant`) against the built-in
 * authorization server of a worker under Deno. The suite prints the authorization URL and waits
 * on its own callback; headless Chromium plays the person who signs in and approves.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DENO, fixtureServer, REPO } from '../support/paths.ts';
import { freePort, ProcessSet, waitForOutput } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';

const CLI = `${REPO}node_modules/@modelcontextprotocol/conformance-modern/dist/index.js`;
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let stack: Stack;
let browser: Browser;
const procs = new ProcessSet();
const outDir = mkdtempSync(join(tmpdir(), 'switchyard-oauth-conformance-'));

beforeAll(async () => {
  stack = await startStack({ servers: { echo: fixtureServer('echo-server.mjs') }, worker: { oauth: { 'built-in': {} } } });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await procs.stopAll();
  await stack?.stop();
  rmSync(outDir, { recursive: true, force: true });
}, 60_000);

/** The checks the suite wrote, per scenario (`authorization-server-<scenario>-<timestamp>/checks.json`): `id: status` each. */
function checks(dir: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of readdirSync(dir)) {
    const scenario = /^authorization-server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(name)?.[1];
    const file = join(dir, name, 'checks.json');
    if (scenario === undefined || !statSync(join(dir, name)).isDirectory()) continue;
    out[scenario] = (JSON.parse(readFileSync(file, 'utf8')) as Array<{ id: string; status: string }>).map((c) => `${c.id}: ${c.status}`);
  }
  return out;
}

describe('official conformance suite, authorization server scenarios', () => {
  it('passes authorization-server-metadata-endpoint and authorization-code-grant', { timeout: 180_000 }, async () => {
    const port = await freePort();
    const registered = await fetch(`${stack.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'MCP conformance suite', redirect_uris: [`http://127.0.0.1:${port}/callback`], token_endpoint_auth_method: 'none' }),
    });
    const { client_id } = (await registered.json()) as { client_id: string };
    const suite = procs.spawn(DENO, ['run', '-A', CLI, 'authorization', '--url', stack.url, '--client-id', client_id, '--resource', `${stack.url}/mcp`, '-p', String(port), '-o', outDir]);
    const [authorizationUrl] = await waitForOutput(suite, () => suite.stdout(), new RegExp(`${stack.url.replace(/[.:/]/g, '\\$&')}/oauth/authorize\\?\\S+`), 'the suite to print the authorization URL');

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(authorizationUrl);
    await page.fill('#token', stack.tokens.alice!);
    await page.click('#sign-in-button');
    await page.locator('#approve-form').waitFor();
    await page.click('#approve-button');
    const code = await suite.exited;
    await context.close();

    const results = checks(outDir);
    expect(Object.keys(results).sort(), suite.stdout().slice(-3000)).toEqual(['authorization-code-grant', 'authorization-server-metadata-endpoint']);
    expect(results['authorization-code-grant']).toEqual(['authorization-code-grant: SUCCESS']);
    expect(results['authorization-server-metadata-endpoint']!.length).toBeGreaterThan(0);
    for (const check of Object.values(results).flat()) expect(check).toMatch(/: SUCCESS$/);
    expect(code).toBe(0);
  });
});
