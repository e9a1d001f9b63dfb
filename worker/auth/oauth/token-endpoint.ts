/**
 * The token endpoint, `/oauth/token` (OAuth 2.1 §3.2): the `authorization_code` grant (with the
 * PKCE verifier and the same redirect URI) and the `refresh_token` grant (rotating), for public
 * clients (`client_id` in the body) and confidential DCR clients (`client_secret_basic` or
 * `client_secret_post`). Plus revocation, `/oauth/revoke` (RFC 7009), with the same client
 * authentication. Form bodies only, capped in size.
 *
 * @module
 */
import type { Context } from 'hono';
import type { OAuthClient } from './clients/client-record.ts';
import type { ClientRegistry } from './clients/client-registry.ts';
import { CONSENT_TTL_MS } from './consent/authorize.ts';
import { CODE_TTL_MS, type Grants } from './grants.ts';
import { invalidClient, invalidRequest, OAuthError } from './oauth-error.ts';
import { CODE_VERIFIER_PATTERN } from './oauth-crypto.ts';
import { ownResource } from './resource-urls.ts';

const FORM_MAX_BYTES = 16 * 1024;

export interface TokenEndpointDeps {
  clients: ClientRegistry;
  grants: Grants;
  baseUrl: (c: Context) => string;
}

/** The form of a token or revocation request; `invalid_request` when it is not one. */
async function readForm(c: Context): Promise<URLSearchParams> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) throw invalidRequest('The body must be application/x-www-form-urlencoded');
  const text = await c.req.text();
  if (text.length > FORM_MAX_BYTES) throw invalidRequest(`The body is larger than ${FORM_MAX_BYTES} bytes`);
  const form = new URLSearchParams(text);
  for (const key of new Set(form.keys())) if (form.getAll(key).length > 1) throw invalidRequest(`Parameter ${key} was sent more than once`);
  return form;
}

function basicCredentials(header: string | undefined): { id: string; secret: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (m === null) return null;
  let decoded: string;
  try {
    decoded = atob(m[1]!);
  } catch {
    throw invalidClient('Malformed Basic credentials');
  }
  const colon = decoded.indexOf(':');
  if (colon === -1) throw invalidClient('Malformed Basic credentials: no ":" between client id and secret');
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined.
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    throw invalidClient('Malformed Basic credentials: bad percent-encoding');
  }
}

/** Authenticates the client of a token-endpoint request (RFC 6749 §2.3) and returns it. */
async function authenticateClient(c: Context, form: URLSearchParams, clients: ClientRegistry): Promise<OAuthClient> {
  const basic = basicCredentials(c.req.header('authorization'));
  const bodyId = form.get('client_id');
  if (basic !== null && bodyId !== null && bodyId !== basic.id) throw invalidClient('client_id differs from the Basic credentials');
  const clientId = basic?.id ?? bodyId;
  if (clientId === null) throw invalidClient('Missing client_id');
  // A metadata document's client is taken by its URL here: its document was read when a person approved it.
  // A registered client approved just before its unused lifetime ran out may still redeem its code.
  const client = await clients.forTokenRequest(clientId, { graceMs: CONSENT_TTL_MS + CODE_TTL_MS });
  if (client.authMethod === 'none') {
    if (basic !== null && basic.secret !== '') throw invalidClient('This client is public: it has no secret');
    return client;
  }
  const secret = client.authMethod === 'client_secret_basic' ? basic?.secret : form.get('client_secret');
  if (secret === undefined || secret === null) throw invalidClient(`Missing client secret (${client.authMethod})`);
  if (!(await clients.secretMatches(client, secret))) throw invalidClient('Invalid client secret');
  return client;
}

function noStore(body: unknown, status = 200): Response {
  return Response.json(body, { status, headers: { 'cache-control': 'no-store', pragma: 'no-cache' } });
}

function errorResponse(error: unknown): Response {
  if (!(error instanceof OAuthError)) throw error;
  return error.toResponse(error.status === 401 ? { 'www-authenticate': 'Basic realm="switchyard"' } : {});
}

export function createTokenHandlers(deps: TokenEndpointDeps) {
  return {
    async token(c: Context): Promise<Response> {
      try {
        const form = await readForm(c);
        const client = await authenticateClient(c, form, deps.clients);
        const base = deps.baseUrl(c);
        const resourceParam = form.get('resource');
        const resource = resourceParam === null ? undefined : ownResource(resourceParam, base);
        if (resource === null) throw new OAuthError('invalid_target', `The resource "${resourceParam!.slice(0, 200)}" is not served here`);
        const grantType = form.get('grant_type');
        if (grantType === 'authorization_code') {
          const code = form.get('code');
          const verifier = form.get('code_verifier');
          const redirectUri = form.get('redirect_uri');
          if (code === null || code === '') throw invalidRequest('Missing code');
          if (verifier === null || verifier === '') throw invalidRequest('Missing code_verifier: PKCE is required');
          // Told before the code is used up: no verifier the client could have made its challenge from looks like this.
          if (!CODE_VERIFIER_PATTERN.test(verifier)) throw invalidRequest('Malformed code_verifier: RFC 7636 wants 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_" and "~"');
          const tokens = await deps.grants.redeemCode({ code, clientId: client.clientId, redirectUri: redirectUri ?? undefined, codeVerifier: verifier, ...(resource !== undefined ? { resource } : {}) });
          await deps.clients.touch(client);
          return noStore(tokens);
        }
        if (grantType === 'refresh_token') {
          const refreshToken = form.get('refresh_token');
          if (refreshToken === null) throw invalidRequest('Missing refresh_token');
          if (client.refreshGrant === false) throw new OAuthError('unauthorized_client', 'This client did not register the refresh_token grant: register it again with "grant_types": ["authorization_code", "refresh_token"]');
          const scope = form.get('scope');
          const tokens = await deps.grants.refresh({ refreshToken, clientId: client.clientId, ...(resource !== undefined ? { resource } : {}), ...(scope !== null ? { scope } : {}) });
          await deps.clients.touch(client);
          return noStore(tokens);
        }
        throw new OAuthError('unsupported_grant_type', `Unsupported grant_type "${(grantType ?? '').slice(0, 50)}": use authorization_code or refresh_token`);
      } catch (error) {
        return errorResponse(error);
      }
    },

    async revoke(c: Context): Promise<Response> {
      try {
        const form = await readForm(c);
        const client = await authenticateClient(c, form, deps.clients);
        const token = form.get('token');
        if (token === null) throw invalidRequest('Missing token');
        await deps.grants.revoke(token, client.clientId);
        return new Response(null, { status: 200, headers: { 'cache-control': 'no-store' } });
      } catch (error) {
        return errorResponse(error);
      }
    },

    async register(c: Context): Promise<Response> {
      try {
        if (!/^application\/json\b/i.test(c.req.header('content-type') ?? '')) throw new OAuthError('invalid_client_metadata', 'The body must be application/json');
        const text = await c.req.text();
        if (text.length > FORM_MAX_BYTES) throw new OAuthError('invalid_client_metadata', `The body is larger than ${FORM_MAX_BYTES} bytes`);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw new OAuthError('invalid_client_metadata', 'The body is not valid JSON');
        }
        return noStore(await deps.clients.register(body), 201);
      } catch (error) {
        return errorResponse(error);
      }
    },
  };
}
