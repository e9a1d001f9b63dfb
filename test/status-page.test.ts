/**
 * The status page at `/`, end to end, as a user sees it: headless Chromium (playwright-core)
 * against the worker under the real Deno binary, a real sidecar linked over the real link, live
 * agent sessions, and failures provoked for real (a server on a host that never linked answers
 * `host-offline`; an edge-direct server nobody listens for fails to initialize).
 *
 * Checks that no token shows the sign-in form and nothing else, that a wrong token gets a clear
 * message, that the admin sees hosts with link state, servers with bindings, live sessions and
 * recent errors with their reasons and the recent calls (never their arguments), and that an agent
 * sees only what is its own. Leaves a
 * screenshot of the admin view in `test-results/status-page.png` (git-ignored).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../worker/auth/agent-auth.ts';
import { closeClient, connectClient } from './support/clients.ts';
import { hostCredential, workerHostEntry, writeSidecarDir } from './support/configs.ts';
import { fixtureServer, REPO } from './support/paths.ts';
import { ProcessSet, waitUntil } from './support/processes.ts';
import { startSidecar } from './support/sidecar-process.ts';
import { startWorkerProcess } from './support/worker-process.ts';

const ENTITY = 'alice-laptop';
const HOST = hostCredential(ENTITY);
const SCREENSHOT = join(REPO, 'test-results', 'status-page.png');
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Chromium and the processes share a busy CI machine: generous limits, no timing assertions. */
const BROWSER_TEST = { timeout: 90_000 };
const ARGUMENT = 'status-page-argument-7f3a';

const procs = new ProcessSet();
const clients: Client[] = [];
let dir: string;
let worker: { url: string };
let browser: Browser;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-status-page-'));
  const echo = fixtureServer('echo-server.mjs');
  const onLaptop = { type: 'user-computer-profile', 'entity-id': ENTITY, target: { type: 'local' } };
  worker = await startWorkerProcess(procs, {
    agents: [
      { name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['echo', 'files', 'docs', 'offline'] },
      { name: 'bob', 'token-sha256': await sha256Hex('bob-token'), servers: ['notes'] },
    ],
    hosts: [workerHostEntry(HOST), workerHostEntry(hostCredential('bob-desktop'))],
    servers: {
      echo: { executor: onLaptop },
      files: { executor: { type: 'reverse-http', 'entity-id': ENTITY } },
      notes: { executor: onLaptop },
      docs: { executor: { type: 'http', url: 'http://127.0.0.1:9/mcp' } },
      offline: { executor: { type: 'user-computer-profile', 'entity-id': 'bob-desktop', target: { type: 'local' } } },
    },
    'admin-token-sha256': await sha256Hex('admin-token'),
  }, { dir });
  writeSidecarDir(join(dir, 'sidecar'), { worker: worker.url, host: HOST, servers: { echo, files: echo, notes: echo } });
  startSidecar(procs, join(dir, 'sidecar'));
  await waitUntil(async () => (await adminHealth()).hosts.some((h) => h['entity-id'] === ENTITY && h.linked), 'the sidecar to link');

  // Live sessions: alice's aggregate (which meets the offline host and the silent edge-direct
  // server) and a passthrough to echo; then one more host-offline, asked for directly.
  clients.push(await connectClient(`${worker.url}/mcp`, 'alice-token'));
  clients.push(await connectClient(`${worker.url}/servers/echo/mcp`, 'alice-token'));
  await clients[1]!.callTool({ name: 'echo', arguments: { message: ARGUMENT } });
  const refused = await fetch(`${worker.url}/servers/offline/mcp`, {
    method: 'POST',
    headers: { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  expect(refused.status).toBe(503);

  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await Promise.allSettled(clients.map(closeClient));
  await procs.stopAll();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function adminHealth(): Promise<{ hosts: Array<{ 'entity-id': string; linked: boolean }> }> {
  return (await (await fetch(`${worker.url}/healthz`, { headers: { authorization: 'Bearer admin-token' } })).json()) as { hosts: Array<{ 'entity-id': string; linked: boolean }> };
}

/** A page in a fresh context (empty session storage), 1280×800, run by `use`, then closed. */
async function withPage(use: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    await page.goto(`${worker.url}/`);
    await use(page);
    expect(await context.cookies()).toEqual([]);
  } finally {
    await context.close();
  }
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.locator('#sign-in').waitFor({ state: 'visible' });
  await page.fill('#token', token);
  await page.click('#sign-in-button');
  await page.locator('#dashboard').waitFor({ state: 'visible' });
}

/** The text of each row of a table body, cells joined by " | ". */
async function rows(page: Page, body: string): Promise<string[]> {
  return page.locator(`#${body} tr`).evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent).join(' | ')));
}

describe('status page at / in a browser', () => {
  it('shows only the sign-in form without a token, and a clear message for a wrong token', BROWSER_TEST, async () => {
    await withPage(async (page) => {
      const healthz: string[] = [];
      page.on('request', (r) => void (new URL(r.url()).pathname === '/healthz' && healthz.push(r.url())));
      await page.locator('#sign-in').waitFor({ state: 'visible' });
      expect(await page.locator('#dashboard').isHidden()).toBe(true);
      const html = await page.content();
      for (const name of [ENTITY, 'bob-desktop', 'alice', 'notes', 'docs', 'echo', 'files']) expect(html).not.toContain(name);
      expect(healthz).toEqual([]);

      await page.fill('#token', 'wrong-token');
      await page.click('#sign-in-button');
      await page.locator('#sign-in-error').waitFor({ state: 'visible' });
      expect(await page.locator('#sign-in-error').textContent()).toMatch(/not accepted \(unauthorized\)/);
      expect(await page.locator('#dashboard').isHidden()).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      expect(page.url()).toBe(`${worker.url}/`);
      expect(healthz).toEqual([`${worker.url}/healthz`]);
    });
  });

  it('shows the admin the linked host, servers with bindings (one failing, and why), live sessions and recent errors with reasons', BROWSER_TEST, async () => {
    await withPage(async (page) => {
      await signIn(page, 'admin-token');
      expect(await page.locator('#viewer').textContent()).toBe('Signed in as admin');
      const hosts = await rows(page, 'hosts-body');
      // The linked host's round trip is its link's (the handshake's, each keepalive's); one offline has none.
      expect(hosts).toEqual([expect.stringMatching(new RegExp(`^${ENTITY} \\| Linked \\| .+ \\| [1-9]\\d* \\| \\d+(\\.\\d)? ms$`)), expect.stringMatching(/^bob-desktop \| Offline \| never linked \| 0 \| \u2013$/)]);
      expect(await rows(page, 'servers-body')).toEqual([
        'echo | hostalice-laptop | Available',
        'files | hostalice-laptop | Available',
        'notes | hostalice-laptop | Available',
        // It has failed every open since start (nothing listens at its URL): its latest failure, whose it was, and when.
        expect.stringMatching(/^docs \| edge-direct \| Failinglaunch-failed (just now|\d+ s ago|\d+ min ago) \(alice\)$/),
        'offline | hostbob-desktop | Host offline',
      ]);
      expect(Number(await page.locator('#stat-sessions').textContent())).toBeGreaterThanOrEqual(1);
      expect(await rows(page, 'sessions-body')).toEqual([
        expect.stringMatching(/^alice \| \/mcp \| 1 \| \d+$/),
        expect.stringMatching(/^alice \| \/servers\/echo\/mcp \| 1 \| 1$/),
      ]);
      const errors = await rows(page, 'errors-body');
      expect(errors).toContainEqual(expect.stringMatching(/ \| host-offline \| offline \| alice \| Host "bob-desktop" is offline: .+×2$/));
      expect(errors).toContainEqual(expect.stringMatching(/ \| launch-failed \| docs \| alice \| Server "docs" did not initialize/));
      const calls = await rows(page, 'calls-body');
      expect(calls).toContainEqual(expect.stringMatching(/ \| alice \| echo \| tools\/call echo \| allowed \| ok \| [\d.]+$/));
      expect(calls).toContainEqual(expect.stringMatching(/ \| alice \| offline \| initialize \| refused \| host-offline \| 0$/));
      expect(await page.content()).not.toContain(ARGUMENT);
      expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['switchyard.status.token']);
      expect(page.url()).toBe(`${worker.url}/`);
      mkdirSync(join(REPO, 'test-results'), { recursive: true });
      await page.screenshot({ path: SCREENSHOT });
    });
  });

  it('shows an agent only its own servers, hosts and errors, and signs out cleanly', BROWSER_TEST, async () => {
    await withPage(async (page) => {
      await signIn(page, 'bob-token');
      expect(await page.locator('#viewer').textContent()).toBe('Signed in as agent bob');
      expect(await rows(page, 'servers-body')).toEqual(['notes | hostalice-laptop | Available']);
      expect(await rows(page, 'hosts-body')).toEqual([expect.stringMatching(new RegExp(`^${ENTITY} \\| Linked`))]);
      expect(await page.locator('#sessions-panel').isHidden()).toBe(true);
      expect(await page.locator('#stat-sessions').textContent()).toBe('0');
      expect(await rows(page, 'errors-body')).toEqual([expect.stringMatching(/^No recent errors/)]);
      expect(await rows(page, 'calls-body')).toEqual(['No calls yet']);
      const cells = await page.locator('#dashboard td').allTextContents();
      for (const other of ['echo', 'files', 'docs', 'offline', 'bob-desktop', 'alice']) expect(cells).not.toContain(other);

      await page.click('#sign-out');
      await page.locator('#sign-in').waitFor({ state: 'visible' });
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      expect(await page.locator('#servers-body tr').count()).toBe(0);

      await signIn(page, 'alice-token');
      expect((await rows(page, 'servers-body')).map((r) => r.split(' | ')[0])).toEqual(['echo', 'files', 'docs', 'offline']);
      expect(await rows(page, 'errors-body')).toContainEqual(expect.stringContaining(' | host-offline | offline | alice | '));
    });
  });
});
