/**
 * The authorization endpoint, `/oauth/authorize` (OAuth 2.1 §4.1, authorization code + PKCE S256
 * only), with its consent flow:
 *
 * 1. `GET` validates the request. Every problem is shown on an error page, never redirected:
 *    every client here registered itself (DCR, or its own metadata document), so its redirect
 *    URI is not one this server trusts, and a redirect nobody acted on would make the worker's
 *    origin a redirector to it (OAuth 2.1 §7.12.2). A valid request is kept as a **consent**
 *    record (10 min) and the sign-in form shown.
 * 2. `POST step=sign-in` checks the token typed in (any agent's or the admin's, compared in
 *    constant time against all of them); five wrong tokens end the consent.
 * 3. `POST step=approve|deny`: the consent is used up; approving for an agent the signed-in
 *    person may act as (an agent: itself; the admin: any) records a grant and redirects with a
 *    one-time code, `state` and `iss` (RFC 9207); denying redirects with `access_denied`. Only
 *    here, after a person signed in and chose, does the worker send the browser to the client.
 *
 * CSRF: each POST must carry the consent id, a CSRF value equal to the browser's
 * `sy_oauth_csrf` cookie (HttpOnly, SameSite=Strict, path /oauth) and to the one the consent
 * recorded, and a same-origin `Origin` (or `Sec-Fetch-Site`) when the browser sends one.
 *
 * @module
 */
import type { Context } from 'hono';
import { matchTokenHash } from '../../agent-auth.ts';
import type { AgentEntry } from '../../../config/worker-config.ts';
import { loopbackOnly, redirectUriMatches, type OAuthClient } from '../clients/client-record.ts';
import type { ClientRegistry } from '../clients/client-registry.ts';
import { SCOPE, type Grants } from '../grants.ts';
import { CODE_CHALLENGE_PATTERN, randomSecret, sha256Hex, stringsEqual } from '../oauth-crypto.ts';
import { invalidRequest, OAuthError } from '../oauth-error.ts';
import type { JsonValue, OAuthStore } from '../oauth-store.ts';
import { ownResource } from '../resource-urls.ts';
import { approvePage, errorPage, signInPage, type ClientSummary } from './consent-page.ts';
import { csrfCookieOf, csrfSetCookie } from './csrf-cookie.ts';
import { WriteBudget } from '../write-budget.ts';

export const CONSENT_TTL_MS = 10 * 60_000;
export const MAX_SIGN_IN_ATTEMPTS = 5;
/** Sign-in pages a process opens per consent lifetime: each is a record strangers make (`WriteBudget`). */
export const CONSENTS_PER_WINDOW = 300;

export interface AuthorizeDeps {
  agents: readonly AgentEntry[];
  adminTokenSha256: string | undefined;
  clients: ClientRegistry;
  grants: Grants;
  store: OAuthStore;
  /** The worker's base URL for a request (the issuer and resource origin). */
  baseUrl: (c: Context) => string;
  now?: () => number;
  /** Default {@link CONSENTS_PER_WINDOW}. */
  consentsPerWindow?: number | undefined;
}

interface ConsentRecord {
  clientId: string;
  redirectUri: string;
  /** Whether the request named its redirect URI (RFC 6749 §4.1.3: then the token request must too). */
  redirectUriSent?: boolean;
  codeChallenge: string;
  resource: string;
  state: string | null;
  csrfSha256: string;
  attempts: number;
  /** After sign-in: the agent name, or null for the admin, and the `token-sha256` signed in with. */
  subject?: { agent: string | null; tokenSha256: string };
}

/** A 303 back to the client on its redirect URI: `params`, then `state` when the request had one, and `iss` (RFC 9207). */
function redirectBack(redirectUri: string, params: Record<string, string>, state: string | null, issuer: string): Response {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (state !== null) url.searchParams.set('state', state);
  url.searchParams.set('iss', issuer);
  return new Response(null, { status: 303, headers: { location: url.href, 'cache-control': 'no-store' } });
}

/** An error that goes back to the client on its redirect URI. */
function redirectWithError(redirectUri: string, issuer: string, state: string | null, error: OAuthError): Response {
  return redirectBack(redirectUri, { error: error.code, error_description: error.message }, state, issuer);
}

/** The error page of a request that is not one this endpoint takes (`invalid_request`). */
const invalidRequestPage = (message: string, status?: number) => errorPage('invalid_request', message, status);

function summary(client: OAuthClient, redirectUri: string): ClientSummary {
  return { clientName: client.clientName, clientId: client.clientId, redirectUri, loopbackOnly: loopbackOnly(client.redirectUris) };
}

export function createAuthorizeHandlers(deps: AuthorizeDeps) {
  const now = deps.now ?? Date.now;
  const consents = new WriteBudget(deps.consentsPerWindow ?? CONSENTS_PER_WINDOW, CONSENT_TTL_MS, now);

  async function loadConsent(id: string): Promise<ConsentRecord | undefined> {
    return (await deps.store.get('consent', await sha256Hex(id))) as unknown as ConsentRecord | undefined;
  }

  async function saveConsent(id: string, record: ConsentRecord): Promise<void> {
    await deps.store.put('consent', await sha256Hex(id), record as unknown as JsonValue, now() + CONSENT_TTL_MS);
  }

  /** The client, or the error page that says why there is none (never a redirect: its redirect URI is not known good). */
  async function clientOrErrorPage(clientId: string): Promise<OAuthClient | Response> {
    try {
      return await deps.clients.get(clientId);
    } catch (error) {
      if (error instanceof OAuthError) return errorPage(error.code, error.message);
      throw error;
    }
  }

  return {
    async get(c: Context): Promise<Response> {
      const q = new URL(c.req.url).searchParams;
      const issuer = deps.baseUrl(c);
      const single = (name: string) => (q.getAll(name).length > 1 ? null : q.get(name));
      const clientId = single('client_id') ?? '';
      const client = await clientOrErrorPage(clientId);
      if (client instanceof Response) return client;
      const requested = single('redirect_uri');
      const redirectUri = requested ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : null);
      if (redirectUri === null) return invalidRequestPage('Missing redirect_uri: this client registered more than one');
      // Exact string match (OAuth 2.1 §2.3.1): no prefix, no normalisation; only a loopback one's port may differ.
      if (!client.redirectUris.some((registered) => redirectUriMatches(registered, redirectUri))) {
        return invalidRequestPage(`The redirect_uri "${redirectUri.slice(0, 200)}" is not registered for this client: nothing was sent to it`);
      }
      const state = single('state');
      const fail = (error: OAuthError) => errorPage(error.code, error.message);
      for (const name of ['response_type', 'code_challenge', 'code_challenge_method', 'resource', 'scope', 'state']) {
        if (q.getAll(name).length > 1) return fail(invalidRequest(`Parameter ${name} was sent more than once`));
      }
      if (q.get('response_type') !== 'code') return fail(new OAuthError('unsupported_response_type', 'Only response_type=code is supported'));
      const challenge = q.get('code_challenge');
      if (challenge === null) return fail(invalidRequest('PKCE is required: send code_challenge and code_challenge_method=S256'));
      if (q.get('code_challenge_method') !== 'S256') return fail(invalidRequest('Only code_challenge_method=S256 is supported'));
      if (!CODE_CHALLENGE_PATTERN.test(challenge)) return fail(invalidRequest('code_challenge must be 43 base64url characters (S256)'));
      const resourceParam = q.get('resource');
      const resource = resourceParam === null ? issuer : ownResource(resourceParam, issuer);
      if (resource === null) {
        return fail(new OAuthError('invalid_target', `The resource "${resourceParam!.slice(0, 200)}" is not served here: this server issues tokens for ${issuer}, ${issuer}/mcp and ${issuer}/servers/<name>/mcp`));
      }

      if (!consents.take()) {
        return errorPage('temporarily_unavailable', `Too many sign-in pages were opened on this server in the last ${CONSENT_TTL_MS / 60_000} minutes: try again in ${consents.minutesUntilFree()} min`, 429);
      }
      const consentId = randomSecret('');
      const existing = csrfCookieOf(c);
      const csrf = existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : randomSecret('');
      await saveConsent(consentId, { clientId: client.clientId, redirectUri, redirectUriSent: requested !== null, codeChallenge: challenge, resource, state, csrfSha256: await sha256Hex(csrf), attempts: 0 });
      return signInPage({ client: summary(client, redirectUri), consentId, csrf, headers: { 'set-cookie': csrfSetCookie(c, csrf, CONSENT_TTL_MS / 1000) } });
    },

    async post(c: Context): Promise<Response> {
      const issuer = deps.baseUrl(c);
      const origin = c.req.header('origin');
      const site = c.req.header('sec-fetch-site');
      if ((origin !== undefined && origin !== issuer) || (site !== undefined && site !== 'same-origin')) {
        return invalidRequestPage('The form was not sent from this server\'s own page', 403);
      }
      const form = await c.req.parseBody();
      const field = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : '');
      const consentId = field('consent');
      const csrf = field('csrf');
      const cookie = csrfCookieOf(c) ?? '';
      const consent = consentId === '' ? undefined : await loadConsent(consentId);
      if (consent === undefined) return invalidRequestPage('This authorization form has expired or was already used: start again from the app');
      if (csrf === '' || !stringsEqual(csrf, cookie) || !stringsEqual(await sha256Hex(csrf), consent.csrfSha256)) {
        return invalidRequestPage('The form\'s CSRF check failed: open the authorization link again in this browser', 403);
      }
      const client = await clientOrErrorPage(consent.clientId);
      if (client instanceof Response) return client;
      const step = field('step');

      if (step === 'sign-in') {
        const hashes = [...deps.agents.map((a) => a['token-sha256']), ...(deps.adminTokenSha256 !== undefined ? [deps.adminTokenSha256] : [])];
        const index = await matchTokenHash(field('token'), hashes);
        if (index === -1) {
          const attempts = consent.attempts + 1;
          if (attempts >= MAX_SIGN_IN_ATTEMPTS) {
            await deps.store.delete('consent', await sha256Hex(consentId));
            return errorPage('access_denied', `Too many wrong tokens (${MAX_SIGN_IN_ATTEMPTS}): start again from the app`, 401);
          }
          await saveConsent(consentId, { ...consent, attempts });
          return signInPage({ client: summary(client, consent.redirectUri), consentId, csrf, error: 'Token not accepted: use an agent token or the admin token of this worker' });
        }
        const agent = index < deps.agents.length ? deps.agents[index]!.name : null;
        await saveConsent(consentId, { ...consent, subject: { agent, tokenSha256: hashes[index]! } });
        return approvePage({
          client: summary(client, consent.redirectUri),
          consentId,
          csrf,
          signedInAs: agent === null ? 'admin' : `agent ${agent}`,
          agents: agent === null ? deps.agents.map((a) => a.name) : [agent],
          resource: consent.resource,
        });
      }

      if (step !== 'approve' && step !== 'deny') return invalidRequestPage('Unknown form step');
      if (consent.subject === undefined) return errorPage('access_denied', 'Sign in first', 401);
      // Used up either way: one consent, one answer.
      await deps.store.delete('consent', await sha256Hex(consentId));
      if (step === 'deny') return redirectWithError(consent.redirectUri, issuer, consent.state, new OAuthError('access_denied', 'The request was denied on the consent page'));
      const agent = field('agent');
      const entry = deps.agents.find((a) => a.name === agent);
      const allowed = entry !== undefined && (consent.subject.agent === null || agent === consent.subject.agent);
      if (!allowed) return errorPage('access_denied', `You may not approve this app for agent "${agent.slice(0, 100)}"`, 403);
      const code = await deps.grants.createCode({
        clientId: consent.clientId,
        redirectUri: consent.redirectUri,
        redirectUriSent: consent.redirectUriSent !== false,
        codeChallenge: consent.codeChallenge,
        resource: consent.resource,
        scope: SCOPE,
        agent,
        agentTokenSha256: entry['token-sha256'],
        approverTokenSha256: consent.subject.tokenSha256,
      });
      return redirectBack(consent.redirectUri, { code }, consent.state, issuer);
    },
  };
}
