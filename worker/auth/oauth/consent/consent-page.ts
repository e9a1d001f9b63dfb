/**
 * The consent pages of the built-in authorization server, in the status page's look (its
 * stylesheet and mark, plus worker/status/assets/consent-page.css, stored with them): sign in with an agent or admin token, then approve (or deny) one client
 * for one agent; and an error page for requests that cannot be sent back to the client.
 *
 * Plain HTML forms, no script. Every value is escaped. Each response carries a fresh CSP nonce
 * for its one `<style>`; nothing else loads, no one may frame the page (`frame-ancestors
 * 'none'`), and a form may submit only here, plus, on the approval page, the client's redirect
 * target (the answer to that form is a redirect there, which browsers check against
 * `form-action` too).
 *
 * @module
 */
import { htmlWithAssets, type StatusPageAssets } from '../../../status/status-page-assets.ts';
import { brand, createNonce, pageStart } from '../../../status/status-page.ts';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

export function consentCsp(nonce: string, formTargets: readonly string[]): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    'img-src data:',
    "base-uri 'none'",
    `form-action 'self'${formTargets.map((t) => ` ${t}`).join('')}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The CSP source of a redirect URI's target: its origin, or its scheme for a native app's private-use scheme. */
export function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

function page(nonce: string, title: string, body: string): ReadableStream<Uint8Array> {
  return htmlWithAssets(
    (assets: StatusPageAssets) => `${pageStart(nonce, `${escapeHtml(title)} · Switchyard`, 'same-origin', assets.css + assets.consentCss)}<header class="topbar">${brand('authorize an app')}</header>
<main><section class="sign-in">${body}</section></main>
</body>
</html>
`,
  );
}

function respond(html: ReadableStream<Uint8Array>, nonce: string, status: number, formTargets: readonly string[], headers: Record<string, string>): Response {
  return new Response(html, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': consentCsp(nonce, formTargets),
      'cache-control': 'no-store',
      // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the form's POST.
      'referrer-policy': 'same-origin',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      ...headers,
    },
  });
}

export interface ClientSummary {
  clientName: string;
  clientId: string;
  redirectUri: string;
  /** Every registered redirect URI is on loopback: anyone on that machine could pose as the app. */
  loopbackOnly: boolean;
}

function clientFacts(client: ClientSummary): string {
  const host = new URL(client.redirectUri).host || new URL(client.redirectUri).protocol;
  return `<dl>
<dt>App</dt><dd id="client-name">${escapeHtml(client.clientName)}</dd>
<dt>Client ID</dt><dd><code>${escapeHtml(client.clientId)}</code></dd>
<dt>Sends you back to</dt><dd id="redirect-host"><strong>${escapeHtml(host)}</strong></dd>
</dl>${client.loopbackOnly ? '<p class="warning" id="loopback-warning">This app receives its approval on this computer (localhost): approve it only if you just started it here yourself.</p>' : ''}`;
}

export interface SignInPageInput {
  client: ClientSummary;
  consentId: string;
  csrf: string;
  error?: string;
  headers?: Record<string, string>;
}

export function signInPage(input: SignInPageInput): Response {
  const nonce = createNonce();
  const body = `<form class="card sign-in-card consent-card" id="sign-in-form" method="post" action="/oauth/authorize" autocomplete="off">
<h1>Sign in to authorize</h1>
<p class="muted">An app asks to use this Switchyard worker's MCP servers. Sign in with an agent token or the admin token, then choose what it may act as.</p>
${clientFacts(input.client)}
<input type="hidden" name="consent" value="${escapeHtml(input.consentId)}">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<input type="hidden" name="step" value="sign-in">
<label for="token">Bearer token</label>
<input id="token" name="token" type="password" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="Paste a token" required>
${input.error !== undefined ? `<p class="form-error" id="sign-in-error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<button type="submit" class="btn btn-primary" id="sign-in-button">Sign in</button>
<p class="fine">The token is checked once and never given to the app: the app gets its own token, valid for the agent you choose.</p>
</form>`;
  return respond(page(nonce, 'Sign in', body), nonce, input.error !== undefined ? 401 : 200, [], input.headers ?? {});
}

export interface ApprovePageInput {
  client: ClientSummary;
  consentId: string;
  csrf: string;
  /** Who signed in: an agent (it may approve only itself) or the admin (any agent). */
  signedInAs: string;
  agents: readonly string[];
  resource: string;
}

export function approvePage(input: ApprovePageInput): Response {
  const nonce = createNonce();
  const options = input.agents.map((a) => `<option value="${escapeHtml(a)}">${escapeHtml(a)}</option>`).join('');
  const body = `<form class="card sign-in-card consent-card" id="approve-form" method="post" action="/oauth/authorize">
<h1>Authorize ${escapeHtml(input.client.clientName)}?</h1>
<p class="muted" id="signed-in-as">Signed in as ${escapeHtml(input.signedInAs)}. The app will act as the agent below: that agent's servers and trust profile, nothing more.</p>
${clientFacts(input.client)}
<dl><dt>For</dt><dd><code>${escapeHtml(input.resource)}</code></dd></dl>
<input type="hidden" name="consent" value="${escapeHtml(input.consentId)}">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<label for="agent">Act as agent</label>
<select id="agent" name="agent">${options}</select>
<div class="actions">
<button type="submit" class="btn btn-deny" name="step" value="deny" id="deny-button">Deny</button>
<button type="submit" class="btn btn-primary" name="step" value="approve" id="approve-button">Approve</button>
</div>
</form>`;
  return respond(page(nonce, 'Authorize', body), nonce, 200, [formTargetOf(input.client.redirectUri)], {});
}

/** A failure that cannot go back to the client (unknown client, foreign redirect URI, expired form). */
export function errorPage(code: string, message: string, status = 400): Response {
  const nonce = createNonce();
  const body = `<div class="card sign-in-card consent-card" id="oauth-error">
<h1>Cannot authorize this app</h1>
<p class="form-error" role="alert"><code id="error-code">${escapeHtml(code)}</code>: <span id="error-message">${escapeHtml(message)}</span></p>
<p class="fine">Nothing was sent back to the app. Start the connection again from the app.</p>
</div>`;
  return respond(page(nonce, 'Error', body), nonce, status, [], {});
}
