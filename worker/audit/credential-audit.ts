/**
 * Puts refused agent credentials on the record: wraps the bearer middleware, and when it answers
 * without letting the request through (a missing or wrong token, 401), writes one `warn` audit
 * line with reason `unauthorized`.
 *
 * The token itself is never written. A wrong token is named by a fingerprint, `sha256:` and the
 * first 12 hex digits of its sha-256: the same digits start the `token-sha256` of a config that
 * once held it, so an operator can tell a stale client config from a stranger, and 48 bits of a
 * hash reveal nothing usable about a random token.
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

export function auditedAuth<E extends { Variables: AgentVariables }>(auth: MiddlewareHandler<E>, audit: WorkerAudit): MiddlewareHandler<E> {
  // The bearer middleware sets the agent exactly when it lets the request through, so that tells
  // a refusal apart without wrapping `next` in a closure and one more await per request (issue 17).
  return async function auditedAgentAuth(c, next) {
    const answer = await auth(c, next);
    if (c.get('agent') === undefined) {
      const token = bearerTokenOf(c.req.header('authorization'));
      audit.credentialRefused(token === null ? null : await tokenFingerprint(token), c.req.path, traceContextOf(c.req.raw.headers));
    }
    return answer;
  };
}
