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
 * Or the operator gives the keys (`SWITCHYARD_OAUTH_KEYS`, a secret of the deployment): then the
 * state holds none, so a copy of it cannot mint client ids, and keys rotate. The first key seals,
 * every listed one opens: a new key put first, the old one kept second for a while, moves every
 * client over without a sign-in; a key removed ends what it sealed.
 *
 * @module
 */
import * as z from '../../../shared/zod.ts';
import { decodeBase64Url, encodeBase64Url } from '../../../shared/base64url.ts';
import { constantTimeEqual } from '../../../shared/credentials.ts';
import type { OAuthStore } from './oauth-store.ts';
import { LocalError } from '../../../shared/errors.ts';

export const SERVER_KEY_ID = 'hmac-sha256';

/** What a sealed value is for: covered by its MAC, so one purpose's value never passes as another's. */
export type SealPurpose = 'client-id' | 'client-secret' | 'consent' | 'approver';

/** 32 bytes, base64url without padding. */
const KEY_TEXT = /^[A-Za-z0-9_-]{43}$/;
const keyRecordSchema = z.lazily(() => z.object({ secret: z.string().check(z.regex(KEY_TEXT)), createdAt: z.number() }));

/** The environment variable (a Workers secret) that gives the server's keys, comma-separated, the sealing one first. */
export const SERVER_KEYS_ENV = 'SWITCHYARD_OAUTH_KEYS';
const MAX_KEYS = 4;

/**
 * The keys `SWITCHYARD_OAUTH_KEYS` gives, or undefined when it is unset or empty (the state's own
 * key then). A key is never quoted back: the message says which one, by position.
 */
export function parseServerKeys(text: string | undefined): readonly string[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const keys = text.split(',').map((k) => k.trim());
  const wrong = (problem: string) => new LocalError('invalid-config', `${SERVER_KEYS_ENV}: ${problem}`);
  if (keys.length > MAX_KEYS) throw wrong(`${keys.length} keys, at most ${MAX_KEYS}: the first seals, the others are old ones kept while clients move over`);
  keys.forEach((key, i) => {
    if (!KEY_TEXT.test(key)) throw wrong(`key ${i + 1} is not a key: expected 43 base64url characters (32 random bytes), comma-separated`);
    if (keys.indexOf(key) !== i) throw wrong(`key ${i + 1} repeats key ${keys.indexOf(key) + 1}`);
  });
  return keys;
}

const importKey = (secret: string) => crypto.subtle.importKey('raw', decodeBase64Url(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export class ServerKey {
  readonly #store: OAuthStore;
  readonly #now: () => number;
  readonly #given: readonly string[] | undefined;
  /** The keys once read, the sealing one first; only resolved keys are kept (a promise begun by one Workers request must not be awaited by another). */
  #keys: readonly CryptoKey[] | undefined;

  /** `keys`: the operator's (`parseServerKeys`); without them the state's own, made on first use. */
  constructor(store: OAuthStore, now: () => number = Date.now, keys?: readonly string[]) {
    this.#store = store;
    this.#now = now;
    this.#given = keys;
  }

  async #cryptoKeys(): Promise<readonly CryptoKey[]> {
    if (this.#keys !== undefined) return this.#keys;
    if (this.#given !== undefined) {
      this.#keys = await Promise.all(this.#given.map(importKey));
      return this.#keys;
    }
    const fresh = { secret: encodeBase64Url(crypto.getRandomValues(new Uint8Array(32))), createdAt: this.#now() };
    const kept = keyRecordSchema().safeParse((await this.#store.get('key', SERVER_KEY_ID)) ?? (await this.#store.add('key', SERVER_KEY_ID, fresh, null)));
    if (!kept.success) throw new Error(`The OAuth state holds a malformed server key (record "key:${SERVER_KEY_ID}"): remove it to make a new one, which ends every registered client and open sign-in form`);
    this.#keys = [await importKey(kept.data.secret)];
    return this.#keys;
  }

  async #mac(key: CryptoKey, purpose: SealPurpose, text: string): Promise<string> {
    return encodeBase64Url(new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`${purpose}\n${text}`))));
  }

  /** The MAC of `text` for `purpose` under the sealing key, base64url (43 characters). */
  async mac(purpose: SealPurpose, text: string): Promise<string> {
    return this.#mac((await this.#cryptoKeys())[0]!, purpose, text);
  }

  /** True when `mac` is the MAC of `text` for `purpose` under any of the keys; each compared in constant time. */
  async verify(purpose: SealPurpose, text: string, mac: string): Promise<boolean> {
    for (const key of await this.#cryptoKeys()) {
      if (constantTimeEqual(encoder.encode(await this.#mac(key, purpose, text)), encoder.encode(mac))) return true;
    }
    return false;
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
