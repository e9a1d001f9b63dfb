/**
 * The authorization endpoint, `/oauth/authorize` (OAuth 2.1 §4.1, authorization code + PKCE S256
 * only), with its consent flow. Nothing a stranger can do here writes to the state: the pending
 * request travels in the page's form as a sealed value (`server-key.ts`, purpose `consent`),
 * authenticated, bound to the browser's CSRF cookie and good for {@link CONSENT_TTL_MS}.
 *
 * 1. `GET` validates the request. Every problem is shown on an error page, never redirected:
 *    every client here registered itself (DCR, or its own metadata document), so its redirect
 *    URI is not one this server trusts, and a redirect nobody acted on would make the worker's
 *    origin a redirector to it (OAuth 2.1 §7.12.2). A valid request is sealed into the sign-in
 *    form (client, redirect URI, PKCE challenge, resource, state, the CSRF value's hash, expiry,
 *    a nonce). A server's endpoint is one whatever its name: which names the config has is told
 *    only to whoever signs in (step 2), as the MCP routes tell only an agent.
 * 2. `POST step=sign-in` checks the token typed in (any agent's or the admin's, compared in
 *    constant time against all of them); five wrong tokens end the form in this process (a count
 *    kept in memory, not in the state). A right one writes a **sign-in record**: who signed in
 *    (the agent, or the admin), a MAC of that token's hash, and the form it answers, kept under
 *    the sha-256 of a fresh random sign-in id until the form expires. The id travels only in the
 *    approval form sent back to that browser. So who signed in is known to the server, not
 *    claimed by the form: nothing the state holds (the key, grants' or the config's token
 *    hashes, the record itself) is enough to approve, only the id handed to the person who typed
 *    a token. The approval page offers only the agents that person may act as that may also use
 *    the resource (one server's endpoint: the agents with that server); with none, the page says
 *    so and nothing is written.
 * 3. `POST step=approve|deny`: the form's sign-in record must be there, for this form; the token
 *    signed in with must still be the configured one. Approving for an agent the signed-in person
 *    may act as (an agent: itself; the admin: any) and that may use the resource takes the record
 *    (one sign-in, one answer), records a grant and redirects with a one-time code, `state` and `iss` (RFC 9207); denying
 *    takes it and redirects with `access_denied`. These writes, and the sign-in record, are the
 *    only ones, and only a person holding a token can make them. Only here, after a person signed
 *    in and chose, does the worker send the browser to the client.
 *
 * CSRF: each POST must carry the sealed form, a CSRF value equal to the browser's
 * `sy_oauth_csrf` cookie (HttpOnly, SameSite=Strict, path /oauth; `__Secure-` and Secure on an
 * https worker, `csrf-cookie.ts`) and to the one the form was sealed with, and a same-origin
 * `Origin` (or `Sec-Fetch-Site`) when the browser sends one.
 *
 * @module
 */
import type { Context } from 'hono';
import * as z from '../../../../shared/zod.ts';
import { encodeBase64Url } from '../../../../shared/base64url.ts';
import { sha256 } from '../../../../shared/credentials.ts';
import { matchTokenHash } from '../../agent-auth.ts';
import type { AgentEntry } from '../../../config/worker-config.ts';
import { loopbackOnly, redirectUriMatches, type OAuthClient } from '../clients/client-record.ts';
import type { ClientRegistry } from '../clients/client-registry.ts';
import { SCOPE, type Grants } from '../grants.ts';
import { CODE_CHALLENGE_PATTERN, randomSecret, sha256Hex, stringsEqual } from '../oauth-crypto.ts';
import { invalidRequest, OAuthError } from '../oauth-error.ts';
import type { OAuthStore } from '../oauth-store.ts';
import { ownResource, serverOfResource } from '../resource-urls.ts';
import type { ServerKey } from '../server-key.ts';
import { approvePage, errorPage, signInPage, type ClientSummary } from './consent-page.ts';
import { csrfCookieOf, csrfSetCookie } from './csrf-cookie.ts';

export const CONSENT_TTL_MS = 10 * 60_000;
/** A sign-in record outlives its form by this much, so no clock step between isolates and the store reads it as gone early. */
const SIGN_IN_RECORD_MARGIN_MS = 60_000;
export const MAX_SIGN_IN_ATTEMPTS = 5;
/** A longer `state` is refused: the request travels in the form, whose body is bounded. */
export const MAX_STATE_LENGTH = 2048;
/** RFC 6749 Appendix A.5: `state` is VSCHAR, printable ASCII (JSON escapes none but `"` and `\`). */
const STATE_PATTERN = /^[\x20-\x7e]*$/;
/** Room a form's POST body keeps besides the sealed request: the CSRF value, the step, and the token typed or the agent chosen. */
const FORM_ROOM_BYTES = 1024;
/** Forms whose wrong tokens this process counts at once; the oldest are forgotten first. */
const ATTEMPT_COUNTS = 10_000;

export interface AuthorizeDeps {
  agents: readonly AgentEntry[];
  adminTokenSha256: string | undefined;
  clients: ClientRegistry;
  grants: Grants;
  store: OAuthStore;
  /** Seals the pending request into the form. */
  key: ServerKey;
  /** The worker's base URL for a request (the issuer and resource origin). */
  baseUrl: (c: Context) => string;
  /** The largest body a form's POST may have (the OAuth routes' bound). */
  formMaxBytes: number;
  now?: () => number;
}

/** The pending authorization request, as sealed into the form. */
const consentSchema = z.lazily(() =>
  z.strictObject({
    /** client_id */
    c: z.string(),
    /** The redirect URI, and whether the request named it (RFC 6749 §4.1.3: then the token request must too). */
    u: z.string(),
    us: z.boolean(),
    /** The PKCE S256 challenge. */
    p: z.string(),
    /** The resource. */
    r: z.string(),
    /** The client's state, or null. */
    s: z.nullable(z.string()),
    /** base64url sha-256 of the CSRF value the form is bound to. */
    x: z.string(),
    /** Expiry, ms since the epoch. */
    e: z.number(),
    /** A random nonce: names this form (its wrong tokens; its sign-in record says which form it answers). */
    n: z.string(),
    /** After sign-in: the sign-in id, whose sha-256 names the sign-in record (who signed in is there, not here). */
    a: z.optional(z.strictObject({ s: z.string().check(z.regex(/^[A-Za-z0-9_-]{43}$/)) })),
  }),
);
type Consent = z.infer<ReturnType<typeof consentSchema>>;

/** Who signed in on a form, kept by the server (`consent:<sha-256 of the sign-in id>`) until the form expires. */
const signInSchema = z.lazily(() =>
  z.strictObject({
    /** The form's nonce and CSRF hash: the record answers that form only. */
    n: z.string(),
    x: z.string(),
    /** The agent signed in as, or null for the admin. */
    g: z.nullable(z.string()),
    /** The MAC (purpose `approver`) of the `token-sha256` signed in with, so a token changed since is noticed. */
    h: z.string(),
  }),
);
type SignIn = z.infer<ReturnType<typeof signInSchema>>;

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

const csrfHash = async (csrf: string) => encodeBase64Url(await sha256(csrf));

/** True when `agent` may use what `resource` opens: every agent may use the base and `/mcp`, only its own servers' endpoints. */
function mayUse(agent: AgentEntry, resource: string, base: string): boolean {
  const server = serverOfResource(resource, base);
  return server === null || agent.servers.includes(server);
}

/** Why nobody signed in on this form may approve it: a token for a server the agent may not use would only ever get `server-not-found`. */
function notUsable(signedInAs: string | null, resource: string, base: string): Response {
  const server = serverOfResource(resource, base);
  const who = signedInAs === null ? 'No agent of this worker may' : `Agent "${signedInAs}" may not`;
  return errorPage('access_denied', `${who} use server "${server}", which this app asked for (${resource}): approve it for an agent whose servers include "${server}", or have the app ask for ${base}/mcp`, 403);
}

export function createAuthorizeHandlers(deps: AuthorizeDeps) {
  const now = deps.now ?? Date.now;
  /** Wrong tokens per form nonce, with the form's expiry; in memory only. */
  const attempts = new Map<string, { count: number; until: number }>();

  function wrongToken(nonce: string, until: number): number {
    const t = now();
    for (const [n, entry] of attempts) {
      if (entry.until > t && attempts.size < ATTEMPT_COUNTS) break;
      attempts.delete(n);
    }
    const count = (attempts.get(nonce)?.count ?? 0) + 1;
    attempts.delete(nonce);
    attempts.set(nonce, { count, until });
    return count;
  }

  const seal = (consent: Consent) => deps.key.seal('consent', consent);
  const approverMac = (tokenSha256: string) => deps.key.mac('approver', tokenSha256);

  /** The form's pending request, or the page that says why it cannot be taken. */
  async function openConsent(sealed: string): Promise<Consent | Response> {
    if (sealed === '') return invalidRequestPage('Missing the authorization form: start again from the app');
    const parsed = consentSchema().safeParse(await deps.key.open('consent', sealed));
    if (!parsed.success) return invalidRequestPage('This authorization form is not valid on this server (it was changed, or made before an update): start again from the app');
    if (parsed.data.e <= now()) return invalidRequestPage('This authorization form has expired: start again from the app');
    return parsed.data;
  }

  /** The client, or the error page that says why there is none (never a redirect: its redirect URI is not known good). */
  async function clientOrErrorPage(clientId: string, graceMs = 0): Promise<OAuthClient | Response> {
    try {
      return await deps.clients.get(clientId, { graceMs });
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
      // Refused on this page, never redirected: with two of either, which client or address is meant is unknown (RFC 6749 §3.1).
      for (const name of ['client_id', 'redirect_uri']) {
        if (q.getAll(name).length > 1) return invalidRequestPage(`Parameter ${name} was sent more than once: nothing was sent to any redirect_uri`);
      }
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
      if (state !== null && state.length > MAX_STATE_LENGTH) return fail(invalidRequest(`The state is longer than ${MAX_STATE_LENGTH} characters`));
      if (state !== null && !STATE_PATTERN.test(state)) return fail(invalidRequest('The state may hold only printable ASCII characters (RFC 6749 Appendix A.5)'));
      const resourceParam = q.get('resource');
      const resource = resourceParam === null ? issuer : ownResource(resourceParam, issuer);
      if (resource === null) {
        return fail(new OAuthError('invalid_target', `The resource "${resourceParam!.slice(0, 200)}" is not served here: this server issues tokens for ${issuer}, ${issuer}/mcp and ${issuer}/servers/<name>/mcp`));
      }

      const existing = csrfCookieOf(c, issuer);
      const csrf = existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : randomSecret('');
      const consent: Consent = { c: client.clientId, u: redirectUri, us: requested !== null, p: challenge, r: resource, s: state, x: await csrfHash(csrf), e: now() + CONSENT_TTL_MS, n: randomSecret('').slice(0, 22) };
      // Refused now rather than after the person typed a token: the approval form (the larger) must fit a POST.
      const approvalBytes = (await seal({ ...consent, a: { s: randomSecret('') } })).length;
      if (approvalBytes > deps.formMaxBytes - FORM_ROOM_BYTES) {
        const [field, length] = ([['state', state?.length ?? 0], ['redirect_uri', redirectUri.length], ['client_id', client.clientId.length]] as const).reduce((a, b) => (b[1] > a[1] ? b : a));
        return fail(invalidRequest(`The authorization request is too large to carry in the sign-in form (${approvalBytes} bytes sealed, at most ${deps.formMaxBytes - FORM_ROOM_BYTES}): its longest part is the ${field} (${length} characters)`));
      }
      return signInPage({ client: summary(client, redirectUri), consentId: await seal(consent), csrf, headers: { 'set-cookie': csrfSetCookie(issuer, csrf, CONSENT_TTL_MS / 1000) } });
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
      const sealed = field('consent');
      const csrf = field('csrf');
      const cookie = csrfCookieOf(c, issuer) ?? '';
      const consent = await openConsent(sealed);
      if (consent instanceof Response) return consent;
      if (csrf === '' || !stringsEqual(csrf, cookie) || !stringsEqual(await csrfHash(csrf), consent.x)) {
        return invalidRequestPage('The form\'s CSRF check failed: open the authorization link again in this browser', 403);
      }
      if ((attempts.get(consent.n)?.count ?? 0) >= MAX_SIGN_IN_ATTEMPTS) return errorPage('access_denied', `Too many wrong tokens (${MAX_SIGN_IN_ATTEMPTS}): start again from the app`, 401);
      // A sign-in begun while the client was young enough may be finished.
      const client = await clientOrErrorPage(consent.c, CONSENT_TTL_MS);
      if (client instanceof Response) return client;
      const step = field('step');

      if (step === 'sign-in') {
        const hashes = [...deps.agents.map((a) => a['token-sha256']), ...(deps.adminTokenSha256 !== undefined ? [deps.adminTokenSha256] : [])];
        const index = await matchTokenHash(field('token'), hashes);
        if (index === -1) {
          if (wrongToken(consent.n, consent.e) >= MAX_SIGN_IN_ATTEMPTS) return errorPage('access_denied', `Too many wrong tokens (${MAX_SIGN_IN_ATTEMPTS}): start again from the app`, 401);
          return signInPage({ client: summary(client, consent.u), consentId: sealed, csrf, error: 'Token not accepted: use an agent token or the admin token of this worker' });
        }
        const agent = index < deps.agents.length ? deps.agents[index]!.name : null;
        // Offered: the agents this person may approve for that may use the resource; none, and there is nothing to approve.
        const offered = deps.agents.filter((a) => (agent === null || a.name === agent) && mayUse(a, consent.r, issuer)).map((a) => a.name);
        if (offered.length === 0) return notUsable(agent, consent.r, issuer);
        // Who signed in stays on the server; the form gets only the id of the record (its sha-256 names it).
        const signInId = randomSecret('');
        const record: SignIn = { n: consent.n, x: consent.x, g: agent, h: await approverMac(hashes[index]!) };
        await deps.store.put('consent', await sha256Hex(signInId), record, consent.e + SIGN_IN_RECORD_MARGIN_MS);
        const signedIn: Consent = { ...consent, a: { s: signInId } };
        return approvePage({
          client: summary(client, consent.u),
          consentId: await seal(signedIn),
          csrf,
          signedInAs: agent === null ? 'admin' : `agent ${agent}`,
          agents: offered,
          resource: consent.r,
        });
      }

      if (step !== 'approve' && step !== 'deny') return invalidRequestPage('Unknown form step');
      if (consent.a === undefined) return errorPage('access_denied', 'Sign in first', 401);
      const recordId = await sha256Hex(consent.a.s);
      const used = () => invalidRequestPage('This authorization form was already used, or its sign-in has expired: start again from the app');
      const parsedRecord = signInSchema().safeParse(await deps.store.get('consent', recordId));
      if (!parsedRecord.success) return used();
      const signIn = parsedRecord.data;
      if (signIn.n !== consent.n || !stringsEqual(signIn.x, consent.x)) return invalidRequestPage('This authorization form does not match its sign-in: start again from the app');
      // The token signed in with, as the config has it now: one changed since may not approve.
      const approverSha256 = signIn.g === null ? deps.adminTokenSha256 : deps.agents.find((a) => a.name === signIn.g)?.['token-sha256'];
      if (approverSha256 === undefined || !(await deps.key.verify('approver', approverSha256, signIn.h))) {
        return errorPage('access_denied', 'The token you signed in with was changed or removed since: sign in again', 401);
      }
      const agent = field('agent');
      const entry = deps.agents.find((a) => a.name === agent);
      // Checked before the form is used up: a wrong choice leaves it to be answered again.
      if (step === 'approve' && (entry === undefined || (signIn.g !== null && agent !== signIn.g))) {
        return errorPage('access_denied', `You may not approve this app for agent "${agent.slice(0, 100)}"`, 403);
      }
      if (step === 'approve' && entry !== undefined && !mayUse(entry, consent.r, issuer)) return notUsable(entry.name, consent.r, issuer);
      // Used up either way: one sign-in, one answer (of two answers at once, one takes the record).
      if ((await deps.store.take('consent', recordId)) === undefined) return used();
      if (step === 'deny' || entry === undefined) return redirectWithError(consent.u, issuer, consent.s, new OAuthError('access_denied', 'The request was denied on the consent page'));
      const code = await deps.grants.createCode({
        clientId: consent.c,
        redirectUri: consent.u,
        redirectUriSent: consent.us,
        codeChallenge: consent.p,
        resource: consent.r,
        scope: SCOPE,
        agent,
        agentTokenSha256: entry['token-sha256'],
        approverTokenSha256: approverSha256,
        ...(client.refreshGrant === false ? { refreshGrant: false as const } : {}),
      });
      return redirectBack(consent.u, { code }, consent.s, issuer);
    },
  };
}
