/**
 * A browser client at another origin, as the MCP Inspector in its browser or a web app meets the
 * worker: headless Chromium (playwright-core) loads a page from one origin and talks MCP to the
 * worker under Deno at another, with its own `fetch`, so every preflight and every CORS header is
 * the browser's to judge, not a test's. An allowed origin (loopback, any port, by default) opens a
 * session, reads its `Mcp-Session-Id` and calls a tool on the real sidecar's server; a page at a
 * foreign origin is refused at its preflight, and its browser shows it nothing.
 */
import { createServer, type Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP foreign.test 127.0.0.1'];

/** What the page does: initialize, then call `echo` on the session it was given, reporting what its browser let it see. */
async function talk([workerUrl, token]: readonly [string, string]): Promise<{ session: string | null; text: string } | { failed: string }> {
  const headers = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2025-06-18' };
  try {
    const opened = await fetch(`${workerUrl}/servers/echo/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'page', version: '1' } } }),
    });
    const session = opened.headers.get('mcp-session-id');
    await opened.text();
    const more = { ...headers, 'mcp-session-id': session ?? '' };
    await fetch(`${workerUrl}/servers/echo/mcp`, { method: 'POST', headers: more, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const called = await fetch(`${workerUrl}/servers/echo/mcp`, { method: 'POST', headers: more, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'from a page' } } }) });
    return { session, text: await called.text() };
  } catch (error) {
    return { failed: String(error) };
  }
}

let stack: Stack;
let browser: Browser;
let pages: Server;
let pagesPort: number;

beforeAll(async () => {
  stack = await startStack({ servers: { echo: fixtureServer('echo-server.mjs') } });
  pages = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>client</title>'));
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesPort = (pages.address() as { port: number }).port;
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
  await stack?.stop();
});

describe('a browser client at another origin (review s25)', () => {
  it('opens a session from an allowed origin, reads its Mcp-Session-Id and gets its tool\'s answer', { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(`http://localhost:${pagesPort}/`);
    const result = await page.evaluate(talk, [stack.url, stack.tokens.alice!] as const);
    await page.close();
    expect(result).toMatchObject({ session: expect.stringMatching(/\S/), text: expect.stringContaining('from a page') });
  });

  it('shows a page at a foreign origin nothing: its preflight is refused', { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(`http://foreign.test:${pagesPort}/`);
    const result = await page.evaluate(talk, [stack.url, stack.tokens.alice!] as const);
    await page.close();
    expect(result).toEqual({ failed: 'TypeError: Failed to fetch' });
  });
});
