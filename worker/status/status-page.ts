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
 * (base64url, so it needs no escaping); the `<main>` markup is `assets/status-page-main.html`, which
 * travels deflated with the script and stylesheet. Host/Origin validation happens in the app's middleware,
 * as for every route.
 *
 * @module
 */
import { encodeBase64Url } from '../../shared/base64url.ts';
import { htmlWithAssets, type StatusPageAssets } from './status-page-assets.ts';

/** A two-track junction: the mark in the top bar and the tab icon. */
export const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="28" height="28" aria-hidden="true">' +
  '<rect width="32" height="32" rx="8" fill="#4263eb"/>' +
  '<path d="M7 16h6M13 16c4 0 5-7 12-7M13 16c4 0 5 7 12 7" stroke="#fff" stroke-width="2.6" fill="none" stroke-linecap="round"/>' +
  '</svg>';

export const FAVICON = `data:image/svg+xml,${encodeURIComponent(LOGO_SVG)}`;

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

/**
 * The opening of a page in the status page's look, up to `<body>`, which the consent pages share:
 * `title` and `css` as HTML (escaped by the caller), `nonce` from `createNonce`.
 */
export function pageStart(nonce: string, title: string, referrer: 'no-referrer' | 'same-origin', css: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="${referrer}">
<title>${title}</title>
<link rel="icon" href="${FAVICON}">
<style nonce="${nonce}">${css}</style>
</head>
<body>
`;
}

/** The mark and name in a page's top bar, with what the page is for. */
export function brand(sub: string): string {
  return `<div class="brand">${LOGO_SVG}<span class="brand-name">Switchyard</span><span class="brand-sub">${sub}</span></div>`;
}

/** The page's HTML; `nonce` must come from `createNonce` (it is inserted verbatim). */
export function statusPageHtml(nonce: string, assets: StatusPageAssets): string {
  return `${pageStart(nonce, 'Switchyard worker status', 'no-referrer', assets.css)}<header class="topbar">
  ${brand('worker status')}
  <div class="session-bar" id="session-bar" hidden>
    <span id="updated-wrap"><span class="live-dot" id="live"></span><span id="updated"></span></span>
    <span class="viewer" id="viewer"></span>
    <button type="button" class="btn btn-quiet" id="sign-out">Sign out</button>
  </div>
</header>
${assets.main}
<script nonce="${nonce}">${assets.script}</script>
</body>
</html>
`;
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
