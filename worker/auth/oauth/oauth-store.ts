/**
 * The built-in authorization server's state, behind one small interface so each runtime keeps it
 * where it can: a JSON file under the state dir on Node and Deno (`file-oauth-store.ts` with the
 * runtime's file access), Durable Object storage on Cloudflare.
 *
 * What a store must guarantee (the whole contract):
 * - records are JSON values keyed by `(kind, id)`; ids are already hashes (sha-256 hex of the
 *   code or token), random identifiers or fixed names (the server key's), never a secret itself,
 *   so a store may keep them as is; one record is a secret, the server key (`server-key.ts`),
 *   so the state is kept as a credential (a 0600 file, a Durable Object);
 * - `put` with `expiresAt` (ms since epoch): after that instant `get`/`take` answer `undefined`
 *   (the store may delete lazily);
 * - `take` reads and deletes in one step: of two concurrent `take`s of one record, exactly one
 *   gets it (single-use codes, rotating refresh tokens and one answer per sign-in rely on this);
 * - `add` writes only when no live record is there, in one step: of two concurrent `add`s of
 *   one record, exactly one value is kept and both callers get it (the server key, created once
 *   by whichever isolate needs it first, relies on this);
 * - everything written has reached durable storage when the promise resolves (a restart loses
 *   nothing a logged-in client holds).
 *
 * On Cloudflare one Durable Object holding every record satisfies all of it (its storage calls
 * are serialised within the object; `take` = `get` then `delete`, `add` = `get` then `put`, with
 * no await between them on other I/O). Key a DO storage entry `${kind}:${id}` and keep `expiresAt` beside the value.
 *
 * @module
 */

/** The kinds of record the authorization server keeps. */
export const OAUTH_RECORD_KINDS = ['client', 'consent', 'code', 'grant', 'access', 'refresh', 'key'] as const;
export type OAuthRecordKind = (typeof OAUTH_RECORD_KINDS)[number];

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface OAuthStore {
  get(kind: OAuthRecordKind, id: string): Promise<JsonValue | undefined>;
  /** Writes (or replaces) a record; `expiresAt` in ms since epoch, or null for no expiry. */
  put(kind: OAuthRecordKind, id: string, value: JsonValue, expiresAt: number | null): Promise<void>;
  /** Reads and deletes a record atomically; `undefined` when absent or expired. */
  take(kind: OAuthRecordKind, id: string): Promise<JsonValue | undefined>;
  delete(kind: OAuthRecordKind, id: string): Promise<void>;
  /** Writes a record unless a live one is there, atomically; the record kept (the one there, or `value`). */
  add(kind: OAuthRecordKind, id: string, value: JsonValue, expiresAt: number | null): Promise<JsonValue>;
}
