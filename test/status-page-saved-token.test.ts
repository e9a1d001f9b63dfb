/**
 * The status page's saved token (sessionStorage) in headless Chromium, against a stand-in worker
 * that serves the real page and answers `/healthz` as told: a reload while the worker answers an
 * error keeps the token for the next reload, and only a refusal (401) forgets it (review s22: one
 * failed reload signed the user out).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusPageResponse } from '../worker/status/status-page.ts';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const REPORT = { ok: true, time: '2026-12-06T12:00:00.000Z', hosts: [], servers: [], sessions: 0, viewer: { kind: 'admin' }, recentErrors: [] };

let server: Server;
let base: string;
let browser: Browser;
/** What `/healthz` answers next. */
let healthz: { status: number; body: unknown } = { status: 200, body: REPORT };

beforeAll(async () => {
  server = createServer(async (req, res) => {
    if (req.url === '/healthz') {
      res.writeHead(healthz.status, { 'content-type': 'application/json' }).end(JSON.stringify(healthz.body));
      return;
    }
    const page = statusPageResponse();
    res.writeHead(page.status, Object.fromEntries(page.headers)).end(await page.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe('the status page\'s saved token', () => {
  it('outlives a reload the worker answers with an error, and not one it refuses', async () => {
    const page = await browser.newPage();
    try {
      healthz = { status: 200, body: REPORT };
      await page.goto(base);
      await page.fill('#token', 'admin-token');
      await page.click('#sign-in-button');
      await page.waitForSelector('#dashboard:not([hidden])');

      healthz = { status: 500, body: { error: { message: 'boom' } } };
      await page.reload();
      await page.waitForSelector('#sign-in-error:not([hidden])');
      expect(await page.textContent('#sign-in-error')).toBe('The worker answered HTTP 500: see its log.');

      healthz = { status: 200, body: REPORT };
      await page.reload();
      await page.waitForSelector('#dashboard:not([hidden])');

      healthz = { status: 401, body: { error: { message: 'no' } } };
      await page.reload();
      await page.waitForSelector('#sign-in-error:not([hidden])');
      healthz = { status: 200, body: REPORT };
      await page.reload();
      await page.waitForSelector('#sign-in:not([hidden])');
      expect(await page.isHidden('#dashboard')).toBe(true);
    } finally {
      await page.close();
    }
  }, 90_000);
});
