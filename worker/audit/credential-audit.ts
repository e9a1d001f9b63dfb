/**
 * Puts refused agent credentials on the record: wraps the bearer middleware, and when it answers
 * without letting the request through (401), writes one audit line: `info` with reason
 * `no-credential` for a request that sent none, `warn` with reason `unauthorized` for one that
 * sent a credential, a wrong token or one in another scheme than `Bearer`.
 *
 * The token itself is never written. A wrong token is named by a fingerprint, `sha256:` and the
 * first 12 hex digits of its sha-256: the same digits start the `token-sha256` of a config that
 * once held it, so an operator can tell a stale client config from a stranger, and 48 bits of a
 * hash reveal nothing usable about a random token. A credential in another scheme (`Basic`, a
 * bare token) gets no fingerprint: it may be a password, which 48 bits of its hash would let
 * anyone holding the log test guesses against.
 *
 * @module
 */
import type { MiddlewareHandler } from 'hono';
import { sha256Hex } from '../../shared/credentials.ts';
import { bearerTokenOf, type AgentVariables } from '../auth/agent-auth.ts';
import { traceContextOf, type WorkerAudit } from './worker-audit.ts';

/** The non-secret name of a presented token. */
export async function tokenFingerprint(token: string): Promise<string> {
  return `sha256:${(await sha256Hex(token)).slice(0, 12)}`;
}

/** The fingerprint of an Authorization header that holds something other than a bearer token. */
const NOT_BEARER = 'none: not a bearer token';

export function auditedAuth<E extends { Variables: AgentVariables }>(auth: MiddlewareHandler<E>, audit: WorkerAudit): MiddlewareHandler<E> {
  // The bearer middleware sets the agent exactly when it lets the request through, so that tells
  // a refusal apart without wrapping `next` in a closure and one more await per request (issue 17).
  return async function auditedAgentAuth(c, next) {
    const answer = await auth(c, next);
    if (c.get('agent') === undefined) {
      const header = c.req.header('authorization');
      const token = bearerTokenOf(header);
      // Only a request that sent nothing is an OAuth client's first step; any credential refused is a warn.
      const presented = token !== null ? await tokenFingerprint(token) : header !== undefined && header.trim() !== '' ? NOT_BEARER : null;
      audit.credentialRefused(presented, c.req.path, traceContextOf(c.req.raw.headers));
    }
    return answer;
  };
}
