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
import { WireError } from '../../shared/errors.ts';

/** The request header naming the host; the secret travels as a bearer token. */
export const ENTITY_ID_HEADER = 'X-Switchyard-Entity-Id';

/** One host entry of the worker config. */
export interface HostCredential {
  'entity-id': string;
  /** Hex SHA-256 of the host secret (64 hex digits, either case). */
  'secret-sha256': string;
}

export type HostAuthResult = { ok: true; entityId: string } | { ok: false; entityId: string | null; error: WireError };

/** Checks a link request's headers; resolves to the entity id or an `unauthorized` WireError. */
export type HostAuthenticator = (headers: Headers) => Promise<HostAuthResult>;

/** Compares two byte arrays without an early exit, so timing does not tell how much matched. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

export function hexToBytes(hex: string): Uint8Array {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('Invalid secret-sha256: expected 64 hex digits');
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

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
