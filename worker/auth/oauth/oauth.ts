/**
 * OAuth 2.1 for agents, composed from the worker config's `oauth` section: the routes (metadata,
 * the built-in authorization server) and the resource side the agent auth middleware consults
 * for every bearer token that is not a static one.
 *
 * A token is accepted on an endpoint when it was issued for this worker's base URL or for that
 * endpoint (see `resource-urls.ts`) and names a configured agent: the client then acts as that
 * agent, with its servers and trust context. A 401 on an agent route points at the endpoint's
 * Protected Resource Metadata (`resource_metadata`, plus `scope` with the built-in server).
 *
 * @module
 */
import type { Context } from 'hono';
import { Hono } from '../../trie-router-hono.ts';
import { LocalError } from '../../../shared/errors.ts';
import type { AgentEntry } from '../../config/worker-config.ts';
import type { AgentTokenExtension } from '../agent-auth.ts';
import { ClientRegistry } from './clients/client-registry.ts';
import { MetadataDocumentClients, type MetadataDocumentFetchDeps } from './clients/metadata-document.ts';
import { createAuthorizeHandlers } from './consent/authorize.ts';
import { errorPage } from './consent/consent-page.ts';
import { ExternalIssuer, type ExternalIssuerDeps } from './external-issuer.ts';
import { Grants, SCOPE, STALE_APPROVAL, type Approval } from './grants.ts';
import { authorizationServerMetadata, protectedResourceMetadata, type MetadataOptions } from './metadata.ts';
import type { OAuthConfig } from './oauth-config.ts';
import type { OAuthStore } from './oauth-store.ts';
import { ServerKey } from './server-key.ts';
import type { WorkerLogger } from '../../log.ts';
import { acceptedResources, AUTHORIZATION_SERVER_WELL_KNOWN, baseUrlOf, PROTECTED_RESOURCE_WELL_KNOWN, resourceMetadataUrl } from './resource-urls.ts';
import { createTokenHandlers } from './token-endpoint.ts';
import { invalidRequest } from './oauth-error.ts';
import { readBoundedBody } from '../../sessions/bounded-body.ts';

export interface OAuthDeps {
  config: OAuthConfig;
  agents: readonly AgentEntry[];
  adminTokenSha256: string | undefined;
  publicUrl: string | undefined;
  /** Required with the built-in server: where clients, grants and tokens live. */
  store?: OAuthStore;
  /** The built-in server's keys from the deployment (`SWITCHYARD_OAUTH_KEYS`); without them the store keeps its own. */
  keys?: readonly string[];
  /** How Client ID Metadata Documents are fetched (fetch, resolver, clock). */
  metadataDocuments?: MetadataDocumentFetchDeps;
  externalIssuer?: ExternalIssuerDeps;
  now?: () => number;
  log?: WorkerLogger;
  /** Told of a grant of the built-in server that ended, why, and its agent where known: the sessions its tokens opened end with it. */
  onGrantEnded?: (grantId: string, why: string, agent?: string) => Promise<unknown> | void;
}

export interface WorkerOAuth {
  routes: Hono;
  resourceAuth: AgentTokenExtension;
}

export const OAUTH_BODY_MAX_BYTES = 16 * 1024;

/**
 * RFC 6750 §3: `error_description` is printable ASCII without `"` and `\`. A reason may quote
 * what a token claims; anything else becomes `?` (a raw byte or line break in a header would
 * fail the whole response), and it stays short.
 */
export function errorDescription(text: string): string {
  const clean = text.replace(/["\\]/g, "'").replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, '?');
  return clean.length > 200 ? `${clean.slice(0, 197)}...` : clean;
}

/**
 * Whether both tokens that approved a grant are still as `config` has them (OAuth 2.1 §4.3.1):
 * its agent's, and the approver's (the agent's own, or the admin's).
 */
export function stillApprovedUnder(config: { agents: readonly AgentEntry[]; adminTokenSha256: string | undefined }, approval: Approval): boolean {
  const current = config.agents.find((a) => a.name === approval.agent)?.['token-sha256'];
  if (current === undefined || approval.agentTokenSha256 !== current) return false;
  return approval.approverTokenSha256 === current || (config.adminTokenSha256 !== undefined && approval.approverTokenSha256 === config.adminTokenSha256);
}

const json = (body: unknown) => Response.json(body, { headers: { 'cache-control': 'max-age=300', 'access-control-allow-origin': '*' } });

export function createWorkerOAuth(deps: OAuthDeps): WorkerOAuth {
  const builtIn = deps.config['built-in'];
  const external = deps.config['external-issuer'] !== undefined ? new ExternalIssuer(deps.config['external-issuer'], deps.externalIssuer) : undefined;
  const baseUrl = (c: Context) => baseUrlOf(c.req.url, deps.publicUrl);
  const options: MetadataOptions = {
    builtIn: builtIn !== undefined,
    externalIssuer: external?.issuer,
    registration: builtIn?.['dynamic-client-registration'] ?? false,
    metadataDocuments: builtIn?.['client-id-metadata-documents'] ?? false,
  };
  const agentNames = new Set(deps.agents.map((a) => a.name));
  // Both tokens as the worker config has them now: a rotated or removed one ends the grant.
  const stillApproved = (approval: Approval) => stillApprovedUnder(deps, approval);
  const routes = new Hono();
  // Every OAuth request body is a small form or JSON document; a larger one is refused while it
  // streams in, and what the handlers read is what was read here (the worker's one body reader).
  routes.use('/oauth/*', async (c, next) => {
    if (c.req.raw.body === null) return next();
    const body = await readBoundedBody(c.req.raw, OAUTH_BODY_MAX_BYTES);
    if (body.kind === 'too-large') {
      const message = `The body is larger than ${OAUTH_BODY_MAX_BYTES} bytes`;
      // The consent form's POST comes from a person's browser: the page says it, not raw JSON.
      return c.req.path === '/oauth/authorize' ? errorPage('invalid_request', `${message}: start again from the app`, 413) : invalidRequest(message, 413).toResponse();
    }
    c.req.raw = new Request(c.req.raw, { body: body.text });
    return next();
  });

  const prm = (c: Context, path: string) => json(protectedResourceMetadata(baseUrl(c), path, options));
  routes.get(PROTECTED_RESOURCE_WELL_KNOWN, (c) => prm(c, ''));
  routes.get(`${PROTECTED_RESOURCE_WELL_KNOWN}/mcp`, (c) => prm(c, '/mcp'));
  // Served for any name, as the endpoint answers 401 for any: which servers exist is told to agents only.
  routes.get(`${PROTECTED_RESOURCE_WELL_KNOWN}/servers/:name/mcp`, (c) => prm(c, `/servers/${encodeURIComponent(c.req.param('name'))}/mcp`));

  let grants: Grants | undefined;
  let clients: ClientRegistry | undefined;
  if (builtIn !== undefined) {
    const store = deps.store;
    if (store === undefined) {
      throw new LocalError('invalid-config', 'oauth.built-in: needs a state store, which this worker was not given: start it with a state dir (SWITCHYARD_STATE_DIR under Deno; switchyard worker gives it one when "built-in" is in the config it starts with)');
    }
    const now = deps.now ?? Date.now;
    // Seals what strangers start (registrations, sign-in forms), so neither writes a record.
    const key = new ServerKey(store, now, deps.keys);
    grants = new Grants(store, { accessTtlMs: builtIn['access-token-seconds'] * 1000, refreshTtlMs: builtIn['refresh-token-days'] * 86_400_000, now, stillApproved, ...(deps.log !== undefined ? { log: deps.log } : {}), ...(deps.onGrantEnded !== undefined ? { onEnded: deps.onGrantEnded } : {}) });
    clients = new ClientRegistry(store, {
      metadataDocuments: builtIn['client-id-metadata-documents'] ? new MetadataDocumentClients({ now, ...deps.metadataDocuments }) : null,
      registration: builtIn['dynamic-client-registration'],
      activeTtlMs: builtIn['refresh-token-days'] * 86_400_000,
      key,
      now,
    });
    const authorize = createAuthorizeHandlers({
      agents: deps.agents,
      adminTokenSha256: deps.adminTokenSha256,
      clients,
      grants,
      store,
      key,
      baseUrl,
      formMaxBytes: OAUTH_BODY_MAX_BYTES,
      now,
    });
    const tokens = createTokenHandlers({ clients, grants, baseUrl });
    routes.get(AUTHORIZATION_SERVER_WELL_KNOWN, (c) => json(authorizationServerMetadata(baseUrl(c), options)));
    routes.get('/oauth/authorize', authorize.get);
    routes.post('/oauth/authorize', authorize.post);
    routes.post('/oauth/token', tokens.token);
    routes.post('/oauth/revoke', tokens.revoke);
    // Off, the route still answers, saying so: a 404 (the metadata names no registration_endpoint, so there is none here), not a 403 (no credential would open it).
    routes.post('/oauth/register', options.registration ? tokens.register : () => invalidRequest(`Dynamic client registration is off on this worker: ${options.metadataDocuments ? 'give the app a Client ID Metadata Document (its https URL as client_id), or ' : ''}ask its admin to set "dynamic-client-registration": true under oauth.built-in in the worker config`, 404).toResponse());
  }

  const resourceAuth: AgentTokenExtension = {
    async verify(token, c) {
      const base = baseUrl(c);
      const accepted = acceptedResources(base, c.req.path);
      if (grants !== undefined) {
        const info = await grants.verifyAccessToken(token);
        if (info !== null) {
          if (!accepted.includes(info.resource)) return { refused: `the token was issued for another resource ("${info.resource}")` };
          if (!agentNames.has(info.agent)) return { refused: `the token's agent "${info.agent}" is no longer configured` };
          if (!(await clients!.stillIssued(info.clientId))) return { refused: 'the app it was issued to is sealed under a key this worker no longer holds: sign in again' };
          return info.stale ? { refused: STALE_APPROVAL.charAt(0).toLowerCase() + STALE_APPROVAL.slice(1) } : { agent: info.agent, grant: info.grant };
        }
      }
      if (external !== undefined) {
        const verdict = await external.verify(token, accepted, agentNames);
        if (verdict !== null) return verdict;
      }
      return null;
    },
    challenge(c, error) {
      const base = baseUrl(c);
      const params = [`resource_metadata="${resourceMetadataUrl(base, c.req.path)}"`];
      if (builtIn !== undefined) params.push(`scope="${SCOPE}"`);
      if (error !== undefined) params.push('error="invalid_token"', `error_description="${errorDescription(error)}"`);
      return `Bearer ${params.join(', ')}`;
    },
  };
  return { routes, resourceAuth };
}
