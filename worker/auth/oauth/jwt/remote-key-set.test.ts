/**
 * The issuer's key set over time, beside the `jose` remote key set it replaced (issue 17): the
 * same issuer (an in-process fetch whose answers the test changes: a rotation, an outage, junk)
 * is read by both through the same steps, and each step must give the same verdict after the
 * same number of fetches; each step also states both, so agreeing on a wrong answer fails.
 */
import { createRemoteJWKSet, customFetch, errors, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExternalIssuer } from '../external-issuer.ts';
import { JWS_ALGORITHMS } from './jws-algorithms.ts';
import { JWKS_COOLDOWN_MS, JWKS_MAX_AGE_MS, RemoteKeySet } from './remote-key-set.ts';

const ISSUER = 'https://login.example.com/tenant';
const JWKS_URI = `${ISSUER}/keys`;
const AUDIENCE = 'https://gateway.example/mcp';
const AGENTS = new Set(['alice']);

type Answer = () => Response | Promise<Response>;

/** One issuer's JWKS endpoint, counting fetches, answering what the test says. */
class FakeIssuer {
  fetches = 0;
  redirects: Array<RequestRedirect | undefined> = [];
  answer: Answer = () => new Response(null, { status: 404 });
  readonly fetch = async (url: string, init?: RequestInit): Promise<Response> => {
    expect(url).toBe(JWKS_URI);
    this.fetches++;
    this.redirects.push(init?.redirect);
    return this.answer();
  };
}

async function joseVerdict(token: string, getKey: ReturnType<typeof createRemoteJWKSet>): Promise<string> {
  try {
    await jwtVerify(token, getKey, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['ES256'] });
    return 'accepted';
  } catch (error) {
    if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey) return 'the token\'s signature does not verify against the issuer\'s keys';
    return `the token cannot be verified: ${(error as Error).message}`;
  }
}

async function ourVerdict(token: string, issuer: ExternalIssuer): Promise<string> {
  const verdict = await issuer.verify(token, [AUDIENCE], AGENTS);
  return verdict !== null && 'agent' in verdict ? 'accepted' : `${verdict?.refused}`;
}

let k1: CryptoKeyPair;
let k2: CryptoKeyPair;
let jwk1: Record<string, unknown>;
let jwk2: Record<string, unknown>;
beforeAll(async () => {
  k1 = (await generateKeyPair('ES256')) as CryptoKeyPair;
  k2 = (await generateKeyPair('ES256')) as CryptoKeyPair;
  jwk1 = { ...(await exportJWK(k1.publicKey)), kid: 'k1' };
  jwk2 = { ...(await exportJWK(k2.publicKey)), kid: 'k2' };
});

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(1_900_000_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

const token = (pair: CryptoKeyPair, kid: string) =>
  new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'ES256', kid }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime('1d').sign(pair.privateKey);

const SIGNATURE = 'the token\'s signature does not verify against the issuer\'s keys';

describe('the issuer\'s key set, beside jose\'s', () => {
  it('keeps the set 10 minutes, refetches on an unknown kid at most every 30 s, and reports every kind of failed fetch', async () => {
    const theirs = new FakeIssuer();
    const ours = new FakeIssuer();
    const jose = createRemoteJWKSet(new URL(JWKS_URI), { [customFetch]: theirs.fetch } as Parameters<typeof createRemoteJWKSet>[1]);
    const issuer = new ExternalIssuer({ issuer: ISSUER, 'jwks-uri': JWKS_URI, 'agent-claim': 'sub' }, { fetch: ours.fetch });
    const serve = (answer: Answer) => {
      theirs.answer = answer;
      ours.answer = answer;
    };
    const t1 = await token(k1, 'k1');
    const t2 = await token(k2, 'k2');
    const steps: Array<[string, number, Answer | null, string, string, number]> = [
      // name, ms to advance first, what the issuer now serves (null: unchanged), token, verdict, fetches so far
      ['first token', 0, () => Response.json({ keys: [jwk1] }), t1, 'accepted', 1],
      ['again: the kept set', 1_000, null, t1, 'accepted', 1],
      ['a rotated key within the cooldown', 1_000, () => Response.json({ keys: [jwk2] }), t2, SIGNATURE, 1],
      ['the rotated key after the cooldown', JWKS_COOLDOWN_MS, null, t2, 'accepted', 2],
      ['the retired key, cooling down', 1_000, null, t1, SIGNATURE, 2],
      ['the retired key after the cooldown: refetched, still gone', JWKS_COOLDOWN_MS, null, t1, SIGNATURE, 3],
      ['a known key just before the set is 10 minutes old', JWKS_MAX_AGE_MS - 1_000, null, t2, 'accepted', 3],
      ['a known key once it is', 1_000, null, t2, 'accepted', 4],
      ['the issuer answers 500', JWKS_MAX_AGE_MS, () => new Response('down', { status: 500 }), t2, 'the token cannot be verified: Expected 200 OK from the JSON Web Key Set HTTP response', 5],
      ['still 500: tried again', 0, null, t2, 'the token cannot be verified: Expected 200 OK from the JSON Web Key Set HTTP response', 6],
      ['a redirect is not followed', 0, () => new Response(null, { status: 302, headers: { location: 'https://evil.example/keys' } }), t2, 'the token cannot be verified: Expected 200 OK from the JSON Web Key Set HTTP response', 7],
      ['not JSON', 0, () => new Response('<html>', { status: 200 }), t2, 'the token cannot be verified: Failed to parse the JSON Web Key Set HTTP response as JSON', 8],
      ['keys not a list', 0, () => Response.json({ keys: 'k2' }), t2, 'the token cannot be verified: JSON Web Key Set malformed', 9],
      ['a key not an object', 0, () => Response.json({ keys: [jwk2, 'k1'] }), t2, 'the token cannot be verified: JSON Web Key Set malformed', 10],
      ['the network fails', 0, () => Promise.reject(new TypeError('fetch failed')), t2, 'the token cannot be verified: fetch failed', 11],
      ['the issuer is back', 0, () => Response.json({ keys: [jwk1, jwk2] }), t1, 'accepted', 12],
    ];
    for (const [name, advance, answer, jwt, verdict, fetches] of steps) {
      vi.setSystemTime(Date.now() + advance);
      if (answer !== null) serve(answer);
      const before = await joseVerdict(jwt, jose);
      const now = await ourVerdict(jwt, issuer);
      expect([now, ours.fetches], name).toEqual([before, theirs.fetches]);
      expect([now, ours.fetches], name).toEqual([verdict, fetches]);
    }
    expect(ours.redirects.every((r) => r === 'manual')).toBe(true);
  });

  it('shares one fetch among the tokens that find the set missing at once', async () => {
    const ours = new FakeIssuer();
    ours.answer = () => Response.json({ keys: [jwk1] });
    const keys = new RemoteKeySet(JWKS_URI, ours.fetch);
    const es256 = JWS_ALGORITHMS.get('ES256')!;
    // Started in one synchronous loop: every call finds the first one's fetch still pending.
    const found = await Promise.all(Array.from({ length: 5 }, () => keys.keyFor({ kid: 'k1' }, 'ES256', es256)));
    expect(ours.fetches).toBe(1);
    expect(found.every((key) => key === found[0] && key.type === 'public')).toBe(true);
  });

  it('on Workers, where a request may not await another\'s I/O, fetches per request and keeps what the latest started fetch brought', async () => {
    vi.stubGlobal('navigator', { userAgent: 'Cloudflare-Workers' });
    try {
      const ours = new FakeIssuer();
      let releaseFirst!: () => void;
      const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
      const answers = [
        async () => {
          await firstHeld;
          return Response.json({ keys: [jwk1] });
        },
        () => Response.json({ keys: [jwk2] }),
      ];
      ours.answer = () => answers[ours.fetches - 1]!();
      const keys = new RemoteKeySet(JWKS_URI, ours.fetch);
      const es256 = JWS_ALGORITHMS.get('ES256')!;
      const early = keys.keyFor({ kid: 'k1' }, 'ES256', es256);
      const late = await keys.keyFor({ kid: 'k2' }, 'ES256', es256);
      expect(late.type).toBe('public');
      releaseFirst();
      // The early request's own fetch brought the older set: not kept, so k1 is unknown (and cooling down).
      await expect(early).rejects.toMatchObject({ code: 'signature' });
      expect(ours.fetches).toBe(2);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
