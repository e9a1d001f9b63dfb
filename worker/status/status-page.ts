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
 * (base64url, so it needs no escaping). Host/Origin validation happens in the app's middleware,
 * as for every route.
 *
 * @module
 */
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
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The page's HTML; `nonce` must come from `createNonce` (it is inserted verbatim). */
export function statusPageHtml(nonce: string, assets: StatusPageAssets): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Switchyard worker status</title>
<link rel="icon" href="${FAVICON}">
<style nonce="${nonce}">${assets.css}</style>
</head>
<body>
<header class="topbar">
  <div class="brand">${LOGO_SVG}<span class="brand-name">Switchyard</span><span class="brand-sub">worker status</span></div>
  <div class="session-bar" id="session-bar" hidden>
    <span id="updated-wrap"><span class="live-dot" id="live"></span><span id="updated"></span></span>
    <span class="viewer" id="viewer"></span>
    <button type="button" class="btn btn-quiet" id="sign-out">Sign out</button>
  </div>
</header>
<main>
  <noscript><p class="banner">This page needs JavaScript to sign in and show the status; <code>/healthz</code> answers the same JSON to a bearer token.</p></noscript>
  <section class="sign-in" id="sign-in" hidden>
    <form class="card sign-in-card" id="sign-in-form" autocomplete="off" novalidate>
      <h1>Switchyard worker</h1>
      <p class="muted">Sign in with the admin token or an agent token to see hosts, servers, sessions and recent errors.</p>
      <label for="token">Bearer token</label>
      <input id="token" type="password" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="Paste a token">
      <p class="form-error" id="sign-in-error" role="alert" hidden></p>
      <button type="submit" class="btn btn-primary" id="sign-in-button">Sign in</button>
      <p class="fine">The token stays in this browser tab (session storage) and is sent only as an Authorization header to <code>/healthz</code>.</p>
    </form>
  </section>
  <section id="dashboard" hidden>
    <div class="page-head">
      <div class="title"><h1>Overview</h1><p class="muted" id="scope"></p></div>
      <div class="endpoint">Agent endpoint<code id="endpoint"></code></div>
    </div>
    <div class="banner" id="banner" role="status" hidden></div>
    <div class="summary">
      <div class="card stat"><div class="stat-label">Hosts linked</div><div class="stat-value" id="stat-hosts"></div><div class="stat-note" id="stat-hosts-note"></div></div>
      <div class="card stat"><div class="stat-label">Servers available</div><div class="stat-value" id="stat-servers"></div><div class="stat-note" id="stat-servers-note"></div></div>
      <div class="card stat"><div class="stat-label">Live sessions</div><div class="stat-value" id="stat-sessions"></div><div class="stat-note" id="stat-sessions-note"></div></div>
      <div class="card stat" id="stat-errors-card"><div class="stat-label">Recent errors</div><div class="stat-value" id="stat-errors"></div><div class="stat-note">kept in this worker's memory</div></div>
    </div>
    <div class="grid">
      <div class="column">
        <section class="card panel" id="hosts-panel">
          <div class="panel-head"><h2>Hosts</h2><span>sidecar links</span></div>
          <table><thead><tr><th>Host</th><th>Link</th><th>Since</th><th class="num">Channels</th></tr></thead><tbody id="hosts-body"></tbody></table>
        </section>
        <section class="card panel" id="sessions-panel">
          <div class="panel-head"><h2>Live sessions</h2><span>per agent and endpoint</span></div>
          <table><thead><tr><th>Agent</th><th>Endpoint</th><th class="num">Sessions</th><th class="num">Channels</th></tr></thead><tbody id="sessions-body"></tbody></table>
        </section>
      </div>
      <section class="card panel" id="servers-panel">
        <div class="panel-head"><h2>Servers</h2><span>where each one runs</span></div>
        <table><thead><tr><th>Server</th><th>Binding</th><th>State</th></tr></thead><tbody id="servers-body"></tbody></table>
      </section>
    </div>
    <section class="card panel" id="errors-panel">
      <div class="panel-head"><h2>Recent errors</h2><span id="errors-count"></span></div>
      <table><thead><tr><th>When</th><th>Reason</th><th>Server</th><th>Agent</th><th>Message</th></tr></thead><tbody id="errors-body"></tbody></table>
    </section>
    <section class="card panel" id="calls-panel">
      <div class="panel-head"><h2>Recent calls</h2><span>the audit log's last calls, never their arguments</span></div>
      <table><thead><tr><th>When</th><th>Agent</th><th>Server</th><th>Call</th><th>Decision</th><th>Outcome</th><th class="num">ms</th></tr></thead><tbody id="calls-body"></tbody></table>
    </section>
  </section>
</main>
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
