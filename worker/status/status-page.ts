/**
 * The status page at `/`: what a user sees first when they open the worker in a browser.
 *
 * The HTML is the same for everyone and holds no data: without a token it is a sign-in form and
 * nothing else. The page's script (`assets/status-page.js`) sends the token to `/healthz`, which
 * applies the usual rules (admin sees everything, an agent its own servers, hosts and sessions),
 * and renders the answer. So the page needs no auth of its own and cannot leak more than
 * `/healthz` would to the same token.
 *
 * Each response carries a fresh CSP nonce for its one `<style>` and one `<script>`; everything
 * else is refused (`default-src 'none'`), only same-origin fetches are allowed, forms may not
 * submit anywhere and no one may frame the page. The only dynamic value in the HTML is the nonce
 * (base64url, so it needs no escaping); the markup is `assets/page.html` and `assets/status-page.html`,
 * which travel deflated with the script and stylesheet. Host/Origin validation happens in the app's middleware,
 * as for every route.
 *
 * @module
 */
import { encodeBase64Url } from '../../shared/base64url.ts';
import { fillTemplate, htmlWithAssets, type StatusPageAssets } from './status-page-assets.ts';

/** The Content-Security-Policy of a page whose style and script carry `nonce`. */
export function statusPageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** A fresh 128-bit nonce, base64url (safe inside an HTML attribute and a CSP header as is). */
export function createNonce(): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)));
}

export interface PageParts {
  /** From `createNonce`. */
  nonce: string;
  /** HTML, escaped by the caller. */
  title: string;
  referrer: 'no-referrer' | 'same-origin';
  css: string;
  /** HTML: the top bar and what follows it. */
  body: string;
}

/** A whole page in the status page's look, which the consent pages share (`assets/page.html`). */
export function pageHtml(assets: StatusPageAssets, parts: PageParts): string {
  const favicon = `data:image/svg+xml,${encodeURIComponent(assets.templates.logo)}`;
  return `${fillTemplate(assets.templates.page, { ...parts, favicon })}\n`;
}

/** The mark and name in a page's top bar, with what the page is for. */
export function brand(assets: StatusPageAssets, sub: string): string {
  return `<div class="brand">${assets.templates.logo}<span class="brand-name">Switchyard</span><span class="brand-sub">${sub}</span></div>`;
}

/** The page's HTML; `nonce` must come from `createNonce` (it is inserted verbatim). */
export function statusPageHtml(nonce: string, assets: StatusPageAssets): string {
  const body = fillTemplate(assets.templates.statusPage, { brand: brand(assets, 'worker status'), nonce, script: assets.script });
  return pageHtml(assets, { nonce, title: 'Switchyard worker status', referrer: 'no-referrer', css: assets.css, body });
}

/** The `/` response: the page with a fresh nonce and headers that keep it from being cached, framed or sniffed. */
export function statusPageResponse(): Response {
  const nonce = createNonce();
  return new Response(htmlWithAssets((assets) => statusPageHtml(nonce, assets)), {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': statusPageCsp(nonce),
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    },
  });
}
