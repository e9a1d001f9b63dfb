/**
 * Host authentication for the link: which sidecar is dialling, and is it really that host.
 *
 * The sidecar sends two headers on the WebSocket upgrade request to `GET /link`:
 *
 * ```
 * Authorization: Bearer <host secret>
 * X-Switchyard-Entity-Id: <entity id>
 * ```
 *
 * The worker config stores only `{"entity-id", "secret-sha256"}` (hex SHA-256 of the secret). The
 * presented secret is hashed with WebCrypto and compared in constant time; an unknown entity id is
 * compared against a dummy digest so that its answer takes as long as a wrong secret's. Headers
 * rather than a query string, so the secret never lands in an access log or a `Referer`.
 *
 * @module
 */
import { constantTimeEqual, hexToBytes, sha256 } from '../../shared/credentials.ts';
import { WireError } from '../../shared/errors.ts';
import { ENTITY_ID_HEADER } from '../../shared/link/link-types.ts';

/** One host entry of the worker config. */
export interface HostCredential {
  'entity-id': string;
  /** Hex SHA-256 of the host secret (64 hex digits, either case). */
  'secret-sha256': string;
}

export type HostAuthResult = { ok: true; entityId: string } | { ok: false; entityId: string | null; error: WireError };

/** Checks a link request's headers; resolves to the entity id or an `unauthorized` WireError. */
export type HostAuthenticator = (headers: Headers) => Promise<HostAuthResult>;

/** Builds the authenticator once per config: digests are decoded up front. */
export function createHostAuthenticator(hosts: readonly HostCredential[]): HostAuthenticator {
  const digests = new Map<string, Uint8Array>(hosts.map((h) => [h['entity-id'], hexToBytes(h['secret-sha256'])]));
  const dummy = new Uint8Array(32);
  const refuse = (entityId: string | null, message: string): HostAuthResult => ({
    ok: false,
    entityId,
    error: new WireError('unauthorized', message),
  });
  return async (headers) => {
    const entityId = headers.get(ENTITY_ID_HEADER);
    const match = /^Bearer +(\S+) *$/i.exec(headers.get('authorization') ?? '');
    if (entityId === null || entityId === '') return refuse(null, `Host credential missing: send ${ENTITY_ID_HEADER} and Authorization: Bearer <secret>`);
    if (match === null) return refuse(entityId, 'Host credential missing: send Authorization: Bearer <secret>');
    const presented = await sha256(match[1]!);
    const expected = digests.get(entityId);
    const equal = constantTimeEqual(presented, expected ?? dummy);
    if (expected === undefined || !equal) return refuse(entityId, 'Host credential refused: unknown entity id or wrong secret');
    return { ok: true, entityId };
  };
}
