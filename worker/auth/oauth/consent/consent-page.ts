/**
 * The consent pages of the built-in authorization server, in the status page's look (its
 * stylesheet and mark, plus worker/status/assets/consent-page.css, and their markup, the
 * templates worker/status/assets/consent-*.html, stored with them): sign in with an agent or admin token, then approve (or deny) one client
 * for one agent; and an error page for requests that cannot be sent back to the client.
 *
 * Plain HTML forms, no script. Every value is escaped, and what the client chose (its name, its
 * id) shows its control and bidi characters written out. Each response carries a fresh CSP nonce
 * for its one `<style>`; nothing else loads, no one may frame the page (`frame-ancestors
 * 'none'`), and a form may submit only here, plus, on the approval page, the client's redirect
 * target (the answer to that form is a redirect there, which browsers check against
 * `form-action` too).
 *
 * @module
 */
import { fillTemplate, htmlWithAssets, type StatusPageAssets } from '../../../status/status-page-assets.ts';
import { brand, createNonce, pageHtml } from '../../../status/status-page.ts';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Control, format, line-separator and lone surrogate characters: line breaks, bidi marks, overrides and isolates, zero-width and tag characters. */
const UNSHOWN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
const NAMED_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * What a client chose to be called (its name, its id) as the page shows it: every character that
 * would not be drawn as itself is written out (`\n`, `\u202E`), so a name can neither put words
 * on a line of their own ("…\nApproved by admin") nor reorder what follows it (after U+202E,
 * "evil" is drawn "live"). Only the zero-width joiner stays: it joins emoji and moves nothing.
 * The result is escaped for HTML as any value.
 */
export function shownText(text: string): string {
  return text.replace(UNSHOWN, (ch) => {
    if (ch === '\u200D') return ch;
    const code = ch.codePointAt(0)!;
    return NAMED_ESCAPES[ch] ?? (code > 0xffff ? `\\u{${code.toString(16).toUpperCase()}}` : `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`);
  });
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

/** A consent page around the form that `form` makes from the assets' templates. */
function page(nonce: string, title: string, form: (assets: StatusPageAssets) => string): ReadableStream<Uint8Array> {
  return htmlWithAssets((assets) => {
    const body = fillTemplate(assets.templates.consentPage, { brand: brand(assets, 'authorize an app'), form: form(assets) });
    return pageHtml(assets, { nonce, title: `${escapeHtml(title)} · Switchyard`, referrer: 'same-origin', css: assets.css + assets.consentCss, body });
  });
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

/**
 * A registered client's id is its registration, sealed (up to 2 KB of text) and starting alike for
 * every client (`sy-client.` and the base64url of the same JSON opening): the page shows its
 * prefix and its last 16 characters, MAC characters that differ for every client; a metadata
 * document's URL is shown whole, since it is who the app is.
 */
function shownClientId(clientId: string): string {
  if (clientId.length <= 64 || /^https:/.test(clientId)) return clientId;
  const dot = clientId.indexOf('.');
  return `${clientId.slice(0, dot === -1 || dot > 16 ? 10 : dot + 1)}\u2026${clientId.slice(-16)}`;
}

function clientFacts(assets: StatusPageAssets, client: ClientSummary): string {
  const host = new URL(client.redirectUri).host || new URL(client.redirectUri).protocol;
  return fillTemplate(assets.templates.consentClient, {
    'client-name': escapeHtml(shownText(client.clientName)),
    'client-id': escapeHtml(shownText(shownClientId(client.clientId))),
    'redirect-host': escapeHtml(host),
    'loopback-warning': client.loopbackOnly ? assets.templates.consentLoopbackWarning : '',
  });
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
  const form = (assets: StatusPageAssets) =>
    fillTemplate(assets.templates.consentSignIn, {
      client: clientFacts(assets, input.client),
      consent: escapeHtml(input.consentId),
      csrf: escapeHtml(input.csrf),
      error: input.error !== undefined ? `<p class="form-error" id="sign-in-error" role="alert">${escapeHtml(input.error)}</p>` : '',
    });
  return respond(page(nonce, 'Sign in', form), nonce, input.error !== undefined ? 401 : 200, [], input.headers ?? {});
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
  const form = (assets: StatusPageAssets) =>
    fillTemplate(assets.templates.consentApprove, {
      'client-name': escapeHtml(shownText(input.client.clientName)),
      'signed-in-as': escapeHtml(input.signedInAs),
      client: clientFacts(assets, input.client),
      resource: escapeHtml(input.resource),
      consent: escapeHtml(input.consentId),
      csrf: escapeHtml(input.csrf),
      options: input.agents.map((a) => `<option value="${escapeHtml(a)}">${escapeHtml(a)}</option>`).join(''),
    });
  return respond(page(nonce, 'Authorize', form), nonce, 200, [formTargetOf(input.client.redirectUri)], {});
}

/** A failure that cannot go back to the client (unknown client, foreign redirect URI, expired form). */
export function errorPage(code: string, message: string, status = 400): Response {
  const nonce = createNonce();
  const form = (assets: StatusPageAssets) => fillTemplate(assets.templates.consentError, { code: escapeHtml(code), message: escapeHtml(message) });
  return respond(page(nonce, 'Error', form), nonce, status, [], {});
}
