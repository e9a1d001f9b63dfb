/**
 * Bearer authentication of agents.
 *
 * The config stores only the sha-256 (hex) of each token. A presented token is hashed with
 * WebCrypto (available on every runtime the worker targets) and compared with **every** agent's
 * hash in constant time, so neither the comparison nor the loop's length says how close a guess
 * was or which agent it resembled. A missing or wrong token is a 401 JSON body with reason
 * `unauthorized` and `WWW-Authenticate: Bearer` (RFC 6750), before any route work.
 *
 * With OAuth configured (`oauth/oauth.ts`), a token that is no static one is handed to the
 * extension, which may accept it as an agent's; the 401 then carries its challenge
 * (`resource_metadata`, RFC 9728), so MCP clients can discover how to sign in. An access token of
 * the built-in server also names its grant (`grant`): a session opened with it ends with the grant.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from 'hono';
import { constantTimeEqual, hexToBytes, sha256 } from '../../shared/credentials.ts';
import { WireError } from '../../shared/errors.ts';
import type { AgentEntry } from '../config/worker-config.ts';
import { VerifiedTokenCache } from './verified-tokens.ts';
import type { AccessGrant } from './oauth/grants.ts';

/** The one sha-256 hex (`shared/credentials.ts`), re-exported for what configures agents by token. */
export { sha256Hex } from '../../shared/credentials.ts';

/** Hono variables set by `agentAuth`: the authenticated agent's config entry, and the OAuth grant its token stands for, if any. */
export type AgentVariables = { agent: AgentEntry; grant?: AccessGrant };

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerTokenOf(header: string | null | undefined): string | null {
  if (header === null || header === undefined) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match === null ? null : match[1]!;
}

/** Index of the hash (hex, as the config holds it) a token matches, or -1; always compares against all of them. */
export async function matchTokenHash(token: string, hashes: readonly string[]): Promise<number> {
  const presented = await sha256(token);
  let found = -1;
  hashes.forEach((hash, i) => {
    if (constantTimeEqual(presented, hexToBytes(hash)) && found === -1) found = i;
  });
  return found;
}

/** Resolves a bearer header to an agent, or null. */
export async function authenticateAgent(header: string | null | undefined, agents: readonly AgentEntry[]): Promise<AgentEntry | null> {
  const token = bearerTokenOf(header);
  if (token === null) return null;
  const index = await matchTokenHash(token, agents.map((a) => a['token-sha256']));
  return index === -1 ? null : agents[index]!;
}

/** Why no token was read from the request: an Authorization header that is not `Bearer <token>` is said apart from none. */
function missingTokenMessage(header: string | undefined): string {
  return header === undefined || header.trim() === ''
    ? 'Missing bearer token: send "Authorization: Bearer <token>"'
    : 'Malformed Authorization header: it is not "Bearer <token>" (one token, no spaces in it)';
}

/** The 401 every agent route answers with; `hadToken` adds RFC 6750's `invalid_token`, `why` words its refusal. */
export function unauthorizedResponse(c: Context, hadToken: boolean, why = 'Invalid bearer token: check the token configured for this agent'): Response {
  const error = hadToken
    ? new WireError('unauthorized', why)
    : new WireError('unauthorized', missingTokenMessage(c.req.header('authorization')));
  c.header('WWW-Authenticate', hadToken ? 'Bearer realm="switchyard", error="invalid_token"' : 'Bearer realm="switchyard"');
  return c.json(error.toHttpBody(), 401);
}

/** Accepts bearer tokens other than the static ones (OAuth access tokens) and words the 401 challenge. */
export interface AgentTokenExtension {
  /** The agent a token stands for, why it is refused, or null when it is none of this extension's. */
  verify(token: string, c: Context): Promise<{ agent: string; grant?: AccessGrant } | { refused: string } | null>;
  /** The `WWW-Authenticate` value of a 401; `error` when a token was presented and refused. */
  challenge(c: Context, error?: string): string;
}

/** Middleware: authenticates the agent and stores it as `c.get('agent')`, or answers 401. */
export function agentAuth(agents: readonly AgentEntry[], extension?: AgentTokenExtension): MiddlewareHandler<{ Variables: AgentVariables }> {
  const verified = new VerifiedTokenCache<AgentEntry>();
  return async function agentAuth(c, next) {
    const header = c.req.header('authorization');
    const token = bearerTokenOf(header);
    const cached = token === null ? undefined : verified.get(token);
    let agent = cached ?? (await authenticateAgent(header, agents));
    if (agent !== null && cached === undefined) verified.remember(token!, agent);
    if (agent === null && extension !== undefined) {
      const verdict = token === null ? null : await extension.verify(token, c);
      if (verdict !== null && 'agent' in verdict) {
        agent = agents.find((a) => a.name === verdict.agent) ?? null;
        if (verdict.grant !== undefined) c.set('grant', verdict.grant);
      }
      if (agent === null) {
        const why = verdict !== null && 'refused' in verdict ? verdict.refused : undefined;
        const error = token === null
          ? new WireError('unauthorized', `${missingTokenMessage(header)}, or sign in with OAuth (see WWW-Authenticate)`)
          : new WireError('unauthorized', `Invalid bearer token: ${why ?? 'not a token of this worker (expired, revoked or unknown)'}`);
        c.header('WWW-Authenticate', extension.challenge(c, token === null ? undefined : (why ?? 'the token is expired, revoked or unknown')));
        return c.json(error.toHttpBody(), 401);
      }
    }
    if (agent === null) return unauthorizedResponse(c, token !== null);
    c.set('agent', agent);
    await next();
  };
}
