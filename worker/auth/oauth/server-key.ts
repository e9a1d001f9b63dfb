/**
 * The authorization server's one secret of its own: a 256-bit HMAC-SHA-256 key, made once and
 * kept in the OAuth state (record `key:hmac-sha256`, no expiry), so that what strangers start
 * needs no record at all. A registered client's `client_id` and a sign-in form's pending request
 * travel as **sealed values**, `<payload>.<mac>`: the base64url of a small JSON document and of
 * its HMAC under this key, so the server takes back only what it handed out, unaltered.
 *
 * Each use has its own purpose, part of what the MAC covers, so a value made for one (a client
 * id) is never taken for another (a consent form). The key is created by the first request that
 * needs it, with the store's `add` (of two isolates or processes racing, both keep the one
 * stored), and read once per process after that. Removing the record ends every client id and
 * form made with it.
 *
 * @module
 */
import * as z from '../../../shared/zod.ts';
import { decodeBase64Url, encodeBase64Url } from '../../../shared/base64url.ts';
import { constantTimeEqual } from '../../../shared/credentials.ts';
import type { OAuthStore } from './oauth-store.ts';

export const SERVER_KEY_ID = 'hmac-sha256';

/** What a sealed value is for: covered by its MAC, so one purpose's value never passes as another's. */
export type SealPurpose = 'client-id' | 'client-secret' | 'consent' | 'approver';

const KeyRecordSchema = z.object({ secret: z.string().check(z.regex(/^[A-Za-z0-9_-]{43}$/)), createdAt: z.number() });

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export class ServerKey {
  readonly #store: OAuthStore;
  readonly #now: () => number;
  /** The key once read; only the resolved key is kept (a promise begun by one Workers request must not be awaited by another). */
  #key: CryptoKey | undefined;

  constructor(store: OAuthStore, now: () => number = Date.now) {
    this.#store = store;
    this.#now = now;
  }

  async #cryptoKey(): Promise<CryptoKey> {
    if (this.#key !== undefined) return this.#key;
    const fresh = { secret: encodeBase64Url(crypto.getRandomValues(new Uint8Array(32))), createdAt: this.#now() };
    const kept = KeyRecordSchema.safeParse((await this.#store.get('key', SERVER_KEY_ID)) ?? (await this.#store.add('key', SERVER_KEY_ID, fresh, null)));
    if (!kept.success) throw new Error(`The OAuth state holds a malformed server key (record "key:${SERVER_KEY_ID}"): remove it to make a new one, which ends every registered client and open sign-in form`);
    this.#key = await crypto.subtle.importKey('raw', decodeBase64Url(kept.data.secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    return this.#key;
  }

  /** The MAC of `text` for `purpose`, base64url (43 characters). */
  async mac(purpose: SealPurpose, text: string): Promise<string> {
    const signature = await crypto.subtle.sign('HMAC', await this.#cryptoKey(), encoder.encode(`${purpose}\n${text}`));
    return encodeBase64Url(new Uint8Array(signature));
  }

  /** True when `mac` is the MAC of `text` for `purpose`; compared in constant time. */
  async verify(purpose: SealPurpose, text: string, mac: string): Promise<boolean> {
    return constantTimeEqual(encoder.encode(await this.mac(purpose, text)), encoder.encode(mac));
  }

  /** `payload` as a sealed value for `purpose`: `<base64url JSON>.<base64url MAC>`. */
  async seal(purpose: SealPurpose, payload: unknown): Promise<string> {
    const body = encodeBase64Url(encoder.encode(JSON.stringify(payload)));
    return `${body}.${await this.mac(purpose, body)}`;
  }

  /** The payload of a value this key sealed for `purpose`, or undefined when it is malformed, altered or another's. */
  async open(purpose: SealPurpose, sealed: string): Promise<unknown> {
    const dot = sealed.indexOf('.');
    if (dot === -1 || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/.test(sealed)) return undefined;
    const body = sealed.slice(0, dot);
    if (!(await this.verify(purpose, body, sealed.slice(dot + 1)))) return undefined;
    try {
      return JSON.parse(decoder.decode(decodeBase64Url(body)));
    } catch {
      return undefined;
    }
  }
}
