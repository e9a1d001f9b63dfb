/**
 * The status page on its own: headers and CSP, and, in real headless Chromium with `/healthz`
 * answered by the test, that hostile values from the worker are shown as text and never become
 * markup. The end-to-end view against a real worker and sidecar is `test/status-page.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { createApp } from '../app.ts';
import { parseWorkerConfig } from '../config/worker-config.ts';
import { InMemorySessionTable } from '../sessions/session-table.ts';
import { statusPageAssets } from './status-page-assets.ts';
import { statusPageResponse } from './status-page.ts';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ORIGIN = 'http://127.0.0.1:8787';
const HOSTILE = '<img src=x onerror=alert(1)>';

const hostileReport = {
  ok: true,
  time: '2026-01-01T00:01:00.000Z',
  viewer: { role: 'admin' },
  hosts: [{ 'entity-id': '<script>alert(2)</script>', linked: true, since: '2026-01-01T00:00:00.000Z', channels: 1, roundTripMs: 103.5 }],
  servers: [{ name: HOSTILE, binding: 'host:<b>bold</b>', state: 'available' }],
  sessions: 1,
  sessionGroups: [{ agent: '<i>agent</i>', endpoint: `/servers/${HOSTILE}/mcp`, sessions: 1, channels: 1 }],
  recentErrors: [{ time: '2026-01-01T00:00:30.000Z', reason: 'launch-failed', server: HOSTILE, agent: 'alice', message: '<a href="javascript:alert(3)">click</a>', count: 2 }],
};

/** Chromium shares a busy CI machine with other suites: generous limits, no timing assertions. */
const BROWSER_TIMEOUT_MS = 90_000;

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, BROWSER_TIMEOUT_MS);
afterAll(async () => {
  await browser?.close();
}, BROWSER_TIMEOUT_MS);

describe('status page response', () => {
  it('carries a fresh nonce per response, used by its one style and one script, and a strict CSP', async () => {
    const [first, second] = [statusPageResponse(), statusPageResponse()];
    const csp = first.headers.get('content-security-policy')!;
    const nonce = /'nonce-([A-Za-z0-9_-]{22})'/.exec(csp)![1]!;
    expect(second.headers.get('content-security-policy')).not.toContain(nonce);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src 'nonce-${nonce}'`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("form-action 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await first.text();
    expect(html.match(/<script\b[^>]*>/g)).toEqual([`<script nonce="${nonce}">`]);
    expect(html.match(/<style\b[^>]*>/g)).toEqual([`<style nonce="${nonce}">`]);
    expect(first.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('x-content-type-options')).toBe('nosniff');
    expect(first.headers.get('x-frame-options')).toBe('DENY');
  });

  it('renders through text only: its script never writes markup', async () => {
    expect((await statusPageAssets()).script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });

  it('is served at / behind the same Host and Origin checks as every route', async () => {
    const sessions = new InMemorySessionTable({ idleMs: 60_000 });
    const app = createApp({ config: parseWorkerConfig({ agents: [], servers: {} }, { runtime: 'edge' }), router: { open: () => Promise.reject(new Error('unused')) }, sessions });
    const page = await app.request('http://127.0.0.1:8787/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect((await app.request('http://127.0.0.1:8787/', { headers: { host: 'evil.example' } })).status).toBe(403);
    expect((await app.request('http://127.0.0.1:8787/', { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    sessions.dispose();
  });
});

describe('status page in Chromium', () => {
  it('shows hostile names and messages as text, never as markup, and keeps to its CSP', { timeout: BROWSER_TIMEOUT_MS }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('dialog', (d) => {
        problems.push(`dialog: ${d.message()}`);
        void d.dismiss();
      });
      await page.route(`${ORIGIN}/**`, async (route) => {
        const path = new URL(route.request().url()).pathname;
        if (path === '/') {
          const response = statusPageResponse();
          return route.fulfill({ status: 200, headers: Object.fromEntries(response.headers), body: await response.text() });
        }
        if (path === '/healthz' && route.request().headers().authorization === 'Bearer admin-token') {
          return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(hostileReport) });
        }
        return route.fulfill({ status: 404, contentType: 'application/json', body: '{}' });
      });

      await page.goto(`${ORIGIN}/`);
      await page.fill('#token', 'admin-token');
      await page.click('#sign-in-button');
      await page.locator('#dashboard').waitFor({ state: 'visible' });

      expect(await page.locator('#servers-body td').first().textContent()).toBe(HOSTILE);
      expect(await page.locator('#hosts-body td').first().textContent()).toBe('<script>alert(2)</script>');
      expect(await page.locator('#hosts-body td').nth(4).textContent()).toBe('103.5 ms');
      expect(await page.locator('#servers-body td').nth(1).textContent()).toBe('host<b>bold</b>');
      expect(await page.locator('#sessions-body td').first().textContent()).toBe('<i>agent</i>');
      const error = page.locator('#errors-body tr').first();
      expect(await error.locator('td').nth(2).textContent()).toBe(HOSTILE);
      expect(await error.locator('td').nth(4).textContent()).toBe('<a href="javascript:alert(3)">click</a>×2');
      expect(await page.locator('#dashboard img, #dashboard script, #dashboard a, #dashboard b, #dashboard i').count()).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
