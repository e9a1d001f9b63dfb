/**
 * `requestState` for Multi Round-Trip Requests bridged from a legacy server (DESIGN §9, notes §4).
 * The agent echoes it back on its retry, so it is attacker-controlled: the host seals what it
 * needs with HMAC-SHA-256 (WebCrypto) under a key only the host holds, and opens it only if the
 * tag verifies.
 *
 * - The key is random per sidecar process and not extractable: it never goes over the link or
 *   into a log. A restarted sidecar has lost its pending calls anyway, so losing the key with
 *   them costs nothing.
 * - The claims bind the principal and the place (agent, server, effective trust revision: the
 *   instance key), the pending call (`handle`, `round` for single use), the method and a digest of
 *   the original params, and an expiry. The pending call itself lives on the host; the state only
 *   names it, so any worker instance can carry the retry (DESIGN §8).
 * - The format is `<base64url(JSON claims)>.<base64url(tag)>`: opaque to the agent, small.
 *
 * @module
 */
import { decodeBase64Url, encodeBase64Url } from '../../../shared/base64url.ts';
import * as z from '../../../shared/zod.ts';

/** The longest modern server state the host seals for its agent. */
export const MAX_INNER_STATE_LENGTH = 32 * 1024;

export const StateClaimsSchema = z.strictObject({
  v: z.literal(1),
  agent: z.string(),
  server: z.string(),
  revision: z.string(),
  handle: z.string(),
  round: z.number().check(z.int(), z.nonnegative()),
  method: z.string(),
  digest: z.string(),
  /** No call is parked: the retry sends the original request again (a legacy server's URL elicitation, `input-rounds.ts`). */
  resend: z.optional(z.literal(true)),
  /** A modern server's own requestState, sealed inside the host's (`modern-server-state.ts`). */
  inner: z.optional(z.string().check(z.maxLength(MAX_INNER_STATE_LENGTH))),
  /** Expiry, ms since the epoch. */
  exp: z.number(),
});
export type StateClaims = z.infer<typeof StateClaimsSchema>;

export type OpenedState = { ok: true; claims: StateClaims } | { ok: false; problem: 'invalid' | 'expired' };

export interface RequestStateCodecOptions {
  /** An HMAC-SHA-256 key; a fresh random one when absent. */
  key?: CryptoKey;
  now?: () => number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Far above any real state (a sealed server state included); a longer string is refused before any decoding. */
export const MAX_STATE_LENGTH = 64 * 1024;

export class RequestStateCodec {
  readonly #key: CryptoKey;
  readonly #now: () => number;

  private constructor(key: CryptoKey, now: () => number) {
    this.#key = key;
    this.#now = now;
  }

  static async create(options: RequestStateCodecOptions = {}): Promise<RequestStateCodec> {
    // Imported from random bytes, not generated: the sidecar runs no key-generation job (`../../link/ed25519-seed.ts`).
    const key = options.key ?? (await crypto.subtle.importKey('raw', crypto.getRandomValues(new Uint8Array(32)), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']));
    return new RequestStateCodec(key, options.now ?? Date.now);
  }

  /** The sealed state for `claims`, valid for `ttlMs` from now. */
  async seal(claims: Omit<StateClaims, 'v' | 'exp'>, ttlMs: number): Promise<string> {
    const body = encodeBase64Url(encoder.encode(JSON.stringify({ v: 1, ...claims, exp: this.#now() + ttlMs })));
    const tag = new Uint8Array(await crypto.subtle.sign('HMAC', this.#key, encoder.encode(body)));
    return `${body}.${encodeBase64Url(tag)}`;
  }

  /** The claims of a state this host sealed, if its tag verifies and it has not expired. */
  async open(state: string): Promise<OpenedState> {
    if (state.length > MAX_STATE_LENGTH) return { ok: false, problem: 'invalid' };
    const parts = state.split('.');
    if (parts.length !== 2) return { ok: false, problem: 'invalid' };
    const [body, tag] = parts as [string, string];
    const tagBytes = fromBase64url(tag);
    if (tagBytes === null || !(await crypto.subtle.verify('HMAC', this.#key, tagBytes as Uint8Array<ArrayBuffer>, encoder.encode(body)))) return { ok: false, problem: 'invalid' };
    const bytes = fromBase64url(body);
    if (bytes === null) return { ok: false, problem: 'invalid' };
    let json: unknown;
    try {
      json = JSON.parse(decoder.decode(bytes));
    } catch {
      return { ok: false, problem: 'invalid' };
    }
    const parsed = StateClaimsSchema.safeParse(json);
    if (!parsed.success) return { ok: false, problem: 'invalid' };
    if (parsed.data.exp <= this.#now()) return { ok: false, problem: 'expired' };
    return { ok: true, claims: parsed.data };
  }
}

let processCodec: Promise<RequestStateCodec> | undefined;

/** The codec of this sidecar process: one random key for its lifetime. */
export function hostRequestStateCodec(): Promise<RequestStateCodec> {
  processCodec ??= RequestStateCodec.create();
  return processCodec;
}

/** SHA-256 (hex) of a canonical JSON rendering of `value` (object keys sorted at every level). */
export async function paramsDigest(value: unknown): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(canonicalJson(value))));
  return [...hash].map((b) => b.toString(16).padStart(2, '0')).join('');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    return decodeBase64Url(text);
  } catch {
    return null;
  }
}
