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
import { bearerTokenOf } from '../auth/agent-auth.ts';
import { traceContextOf, type WorkerAudit } from './worker-audit.ts';

/** The non-secret name of a presented token. */
export async function tokenFingerprint(token: string): Promise<string> {
  return `sha256:${(await sha256Hex(token)).slice(0, 12)}`;
}

export function auditedAuth<E extends { Variables: object }>(auth: MiddlewareHandler<E>, audit: WorkerAudit): MiddlewareHandler<E> {
  return async function auditedAgentAuth(c, next) {
    let passed = false;
    const answer = await auth(c, async () => {
      passed = true;
      await next();
    });
    if (!passed) {
      const token = bearerTokenOf(c.req.header('authorization'));
      audit.credentialRefused(token === null ? null : await tokenFingerprint(token), c.req.path, traceContextOf(c.req.raw.headers));
    }
    return answer;
  };
}
