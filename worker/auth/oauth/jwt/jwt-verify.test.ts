/**
 * The JWT verifier against the `jose` code it replaced (issue 17), kept here as the oracle: the
 * external issuer's old `verify` (jose's `jwtVerify` over the same key set, the same algorithms)
 * and the new one must give every token the same verdict, word for word. The tokens are signed
 * for real with a key of every accepted algorithm, or crafted byte by byte where jose would not
 * sign them (alg none, an HMAC over the public key, `crit`, malformed segments), and each case
 * also states the verdict it must have, so two implementations that agree on a wrong answer fail.
 */
import { createLocalJWKSet, errors, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeBase64Url } from '../../../../shared/base64url.ts';
import { ExternalIssuer, type ExternalVerdict } from '../external-issuer.ts';
import { JWS_ALGORITHMS } from './jws-algorithms.ts';

const ISSUER = 'https://login.example.com/tenant';
const AUDIENCE = 'https://gateway.example/servers/alpha/mcp';
const AUDIENCES = ['https://gateway.example', AUDIENCE];
const AGENTS = new Set(['alice']);
const NOW = 1_900_000_000;
const ALGS = [...JWS_ALGORITHMS.keys()];

/** The external issuer's `verify` before this verifier, with jose, as it was, plus `exp` required (RFC 9068 §2.2). */
async function joseVerify(token: string, jwks: JSONWebKeySet): Promise<ExternalVerdict> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet(jwks), { issuer: ISSUER, audience: [...AUDIENCES], algorithms: ALGS, requiredClaims: ['exp'] }));
  } catch (error) {
    return { refused: joseDescribe(error) };
  }
  const agent = payload.sub;
  return typeof agent === 'string' && AGENTS.has(agent) ? { agent } : { refused: 'the token\'s "sub" claim names no agent of this worker' };
}

function joseDescribe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired';
  if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'exp' && error.reason === 'missing') return 'the token has no "exp" claim, and an access token must expire';
  if (error instanceof errors.JWTClaimValidationFailed) {
    return error.claim === 'aud' ? 'the token was issued for another resource (aud)' : `the token's "${error.claim}" claim is not accepted`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey) return 'the token\'s signature does not verify against the issuer\'s keys';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the token\'s signing algorithm is not accepted';
  return `the token cannot be verified: ${(error as Error).message}`;
}

function issuerServing(jwks: JSONWebKeySet): ExternalIssuer {
  const fetchFn = async (url: string) => (url === `${ISSUER}/keys` ? Response.json(jwks) : new Response(null, { status: 404 }));
  return new ExternalIssuer({ issuer: ISSUER, 'jwks-uri': `${ISSUER}/keys`, 'agent-claim': 'sub' }, { fetch: fetchFn });
}

const text = new TextEncoder();
const b64 = (value: unknown) => encodeBase64Url(text.encode(typeof value === 'string' ? value : JSON.stringify(value)));

/** A compact JWS signed over exactly these segments, whatever they hold. */
async function signRaw(header: unknown, payload: unknown, key: CryptoKey, signAs: string, rawPayload = false): Promise<string> {
  const input = `${b64(header)}.${rawPayload ? (payload as string) : b64(payload)}`;
  const params = JWS_ALGORITHMS.get(signAs)!.verifyParams;
  return `${input}.${encodeBase64Url(new Uint8Array(await crypto.subtle.sign(params, key, text.encode(input))))}`;
}

const claims = (extra: Record<string, unknown> = {}) => ({ iss: ISSUER, aud: AUDIENCE, sub: 'alice', iat: NOW - 10, exp: NOW + 300, ...extra });

/** Replaces one character in the middle of a segment (the last may only carry padding bits). */
function tamper(token: string, segment: number): string {
  const parts = token.split('.');
  const s = parts[segment]!;
  const i = Math.floor(s.length / 2);
  parts[segment] = s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  return parts.join('.');
}

type Pair = CryptoKeyPair;
const pairs = new Map<string, Pair>();
let setA: JSONWebKeySet;
let setB: JSONWebKeySet;
let rsa1: Pair;
let rsa2: Pair;
let weak: Pair;
let ec: Pair;
let ed: Pair;
let ecPrivateJwk: Record<string, unknown>;

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW * 1000);
  for (const alg of ALGS) pairs.set(alg, (await generateKeyPair(alg, { extractable: true })) as Pair);
  setA = { keys: await Promise.all(ALGS.map(async (alg) => ({ ...(await exportJWK(pairs.get(alg)!.publicKey)), kid: alg, alg, use: 'sig' }))) };
  const rsa = (bits: number) => crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: bits, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']) as Promise<Pair>;
  [rsa1, rsa2, weak] = await Promise.all([rsa(2048), rsa(2048), rsa(1024)]);
  ec = (await generateKeyPair('ES256', { extractable: true })) as Pair;
  ed = (await generateKeyPair('EdDSA', { extractable: true })) as Pair;
  const pub = async (pair: Pair) => exportJWK(pair.publicKey);
  ecPrivateJwk = { ...(await exportJWK(ec.privateKey)), kid: 'private' };
  setB = {
    keys: [
      { ...(await pub(rsa1)), kid: 'r1' },
      { ...(await pub(rsa2)), kid: 'r2' },
      { ...(await pub(weak)), kid: 'weak', alg: 'RS256' },
      { ...(await pub(ec)), kid: 'enc', use: 'enc' },
      { ...(await pub(ec)), kid: 'ops-sign', key_ops: ['sign'] },
      { ...(await pub(ec)), kid: 'ops-verify', key_ops: ['verify'] },
      { ...(await pub(ec)), kid: 'ops-twice', key_ops: ['verify', 'verify'] },
      { ...(await pub(ec)), kid: 'ext-text', ext: 'yes' },
      { ...(await pub(ec)), kid: 'dup' },
      { ...(await pub(ec)), kid: 'dup' },
      { ...(await pub(ec)), kid: 'es384-only', alg: 'ES384' },
      ecPrivateJwk,
      { ...(await pub(ed)), kid: 'ed' },
      { kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA', kid: 'broken' },
    ],
  } as JSONWebKeySet;
});

afterAll(() => {
  vi.useRealTimers();
});

const signed = (alg: string, payload: Record<string, unknown>, header: Record<string, unknown> = { kid: alg }, key = pairs.get(alg)!.privateKey) =>
  new SignJWT(payload).setProtectedHeader({ alg, ...header }).sign(key);

const accepted: ExternalVerdict = { agent: 'alice' };
const refused = (why: string): ExternalVerdict => ({ refused: why });
const UNEXPIRING = refused('the token has no "exp" claim, and an access token must expire');
const SIGNATURE = refused('the token\'s signature does not verify against the issuer\'s keys');
const ALGORITHM = refused('the token\'s signing algorithm is not accepted');
const claimRefused = (claim: string) => refused(`the token's "${claim}" claim is not accepted`);
const cannot = (why: string) => refused(`the token cannot be verified: ${why}`);

async function expectSame(cases: Array<[string, string, ExternalVerdict]>, jwks: JSONWebKeySet) {
  const issuer = issuerServing(jwks);
  for (const [name, token, expected] of cases) {
    const before = await joseVerify(token, jwks);
    const now = await issuer.verify(token, AUDIENCES, AGENTS);
    expect(now, name).toEqual(before);
    expect(now, name).toEqual(expected);
  }
}

describe('the JWT verifier, token by token beside jose', () => {
  it('accepts a token of every algorithm and refuses it tampered, re-labelled or signed by another key', async () => {
    const cases: Array<[string, string, ExternalVerdict]> = [];
    for (const alg of ALGS) {
      const token = await signed(alg, claims());
      cases.push([`${alg} valid`, token, accepted]);
      cases.push([`${alg} without kid`, await signed(alg, claims(), {}), accepted]);
      cases.push([`${alg} signature tampered`, tamper(token, 2), SIGNATURE]);
      cases.push([`${alg} payload tampered`, `${token.split('.')[0]}.${b64(claims({ sub: 'alice', admin: true }))}.${token.split('.')[2]}`, SIGNATURE]);
      cases.push([`${alg} signature of another token`, `${token.split('.').slice(0, 2).join('.')}.${(await signed(alg, claims({ jti: 'x' }))).split('.')[2]}`, SIGNATURE]);
      const other = ALGS.find((a) => a !== alg && JWS_ALGORITHMS.get(a)!.kty === JWS_ALGORITHMS.get(alg)!.kty) ?? 'ES256';
      cases.push([`${alg} header naming the ${other} key`, await signed(alg, claims(), { kid: other }), SIGNATURE]);
      cases.push([`${alg} under another alg label`, await signRaw({ alg: other, kid: alg }, claims(), pairs.get(alg)!.privateKey, alg), SIGNATURE]);
    }
    await expectSame(cases, setA);
  });

  it('refuses alg none, an HMAC over the public key, algorithms outside the list and a missing alg', async () => {
    const rsaPublic = JSON.stringify(setA.keys.find((k) => k.kid === 'RS256'));
    const hmacKey = await crypto.subtle.importKey('raw', text.encode(rsaPublic), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const payload = b64(claims());
    const hs = `${b64({ alg: 'HS256', kid: 'RS256' })}.${payload}`;
    const hsToken = `${hs}.${encodeBase64Url(new Uint8Array(await crypto.subtle.sign('HMAC', hmacKey, text.encode(hs))))}`;
    const es = pairs.get('ES256')!.privateKey;
    await expectSame(
      [
        ['alg none', `${b64({ alg: 'none', kid: 'ES256' })}.${payload}.AAAA`, ALGORITHM],
        ['alg NONE', `${b64({ alg: 'NONE' })}.${payload}.AAAA`, ALGORITHM],
        ['HS256 keyed with the RSA public key', hsToken, ALGORITHM],
        ['Ed25519 (a name jose knows, not in the list)', await signRaw({ alg: 'Ed25519', kid: 'EdDSA' }, claims(), pairs.get('EdDSA')!.privateKey, 'EdDSA'), ALGORITHM],
        ['ML-DSA-44', `${b64({ alg: 'ML-DSA-44' })}.${payload}.AAAA`, ALGORITHM],
        ['alg missing', await signRaw({ kid: 'ES256' }, claims(), es, 'ES256'), cannot('JWS "alg" (Algorithm) Header Parameter missing or invalid')],
        ['alg empty', await signRaw({ alg: '', kid: 'ES256' }, claims(), es, 'ES256'), cannot('JWS "alg" (Algorithm) Header Parameter missing or invalid')],
        ['alg a number', await signRaw({ alg: 256, kid: 'ES256' }, claims(), es, 'ES256'), cannot('JWS "alg" (Algorithm) Header Parameter missing or invalid')],
        ['alg toString', `${b64({ alg: 'toString' })}.${payload}.AAAA`, ALGORITHM],
        ['alg __proto__', `${b64({ alg: '__proto__' })}.${payload}.AAAA`, ALGORITHM],
      ],
      setA,
    );
  });

  it('checks iss, aud, exp, nbf and iat as jose did, with no clock skew, and requires exp', async () => {
    const es = (extra: Record<string, unknown>) => signRaw({ alg: 'ES256', kid: 'ES256' }, claims(extra), pairs.get('ES256')!.privateKey, 'ES256');
    const without = async (claim: string) => {
      const c: Record<string, unknown> = claims();
      delete c[claim];
      return signRaw({ alg: 'ES256', kid: 'ES256' }, c, pairs.get('ES256')!.privateKey, 'ES256');
    };
    const AUD = refused('the token was issued for another resource (aud)');
    await expectSame(
      [
        ['expired a second ago', await es({ exp: NOW - 1 }), refused('the token has expired')],
        ['expiring this second', await es({ exp: NOW }), refused('the token has expired')],
        ['expiring next second', await es({ exp: NOW + 1 }), accepted],
        ['exp a string', await es({ exp: String(NOW + 300) }), claimRefused('exp')],
        ['exp null', await es({ exp: null }), claimRefused('exp')],
        ['no exp', await without('exp'), UNEXPIRING],
        ['no exp, another issuer: exp is said (presence before values)', await signRaw({ alg: 'ES256', kid: 'ES256' }, { iss: 'https://evil.example', aud: AUDIENCE, sub: 'alice' }, pairs.get('ES256')!.privateKey, 'ES256'), UNEXPIRING],
        ['no exp and no aud: aud is said', await signRaw({ alg: 'ES256', kid: 'ES256' }, { iss: ISSUER, sub: 'alice' }, pairs.get('ES256')!.privateKey, 'ES256'), refused('the token was issued for another resource (aud)')],
        ['no exp, nbf in the future: exp is said', await signRaw({ alg: 'ES256', kid: 'ES256' }, { iss: ISSUER, aud: AUDIENCE, sub: 'alice', nbf: NOW + 10 }, pairs.get('ES256')!.privateKey, 'ES256'), UNEXPIRING],
        ['nbf next second', await es({ nbf: NOW + 1 }), claimRefused('nbf')],
        ['nbf this second', await es({ nbf: NOW }), accepted],
        ['nbf a string', await es({ nbf: 'now' }), claimRefused('nbf')],
        ['iat a string', await es({ iat: 'yesterday' }), claimRefused('iat')],
        ['iat in the future (not checked)', await es({ iat: NOW + 3600 }), accepted],
        ['nbf and exp both bad: nbf is said', await es({ nbf: NOW + 10, exp: NOW - 10 }), claimRefused('nbf')],
        ['another issuer', await es({ iss: 'https://evil.example' }), claimRefused('iss')],
        ['issuer with a trailing slash', await es({ iss: `${ISSUER}/` }), claimRefused('iss')],
        ['issuer in an array', await es({ iss: [ISSUER] }), claimRefused('iss')],
        ['no issuer', await without('iss'), claimRefused('iss')],
        ['no issuer and no aud: iss is said', await signRaw({ alg: 'ES256', kid: 'ES256' }, { sub: 'alice', exp: NOW + 60 }, pairs.get('ES256')!.privateKey, 'ES256'), claimRefused('iss')],
        ['another audience', await es({ aud: 'https://other.example/mcp' }), AUD],
        ['the base URL audience', await es({ aud: 'https://gateway.example' }), accepted],
        ['audiences with ours among them', await es({ aud: ['https://other.example', 7, AUDIENCE] }), accepted],
        ['audiences without ours', await es({ aud: ['https://other.example'] }), AUD],
        ['empty audiences', await es({ aud: [] }), AUD],
        ['aud a number', await es({ aud: 7 }), AUD],
        ['no aud', await without('aud'), AUD],
        ['expired and for another audience: aud is said', await es({ aud: 'x', exp: NOW - 10 }), AUD],
        ['another agent', await es({ sub: 'mallory' }), refused('the token\'s "sub" claim names no agent of this worker')],
        ['agent a number', await es({ sub: 7 }), refused('the token\'s "sub" claim names no agent of this worker')],
      ],
      setA,
    );
  });

  it('refuses malformed headers, payloads and signatures, and crit other than b64', async () => {
    const es = pairs.get('ES256')!.privateKey;
    const h = { alg: 'ES256', kid: 'ES256' };
    const valid = await signRaw(h, claims(), es, 'ES256');
    const [, payload, signature] = valid.split('.');
    await expectSame(
      [
        ['header not JSON', `${b64('not json')}.${payload}.${signature}`, cannot('JWS Protected Header is invalid')],
        ['header a JSON array', `${b64(['ES256'])}.${payload}.${signature}`, cannot('JWS Protected Header is invalid')],
        ['header JSON null', `${b64('null')}.${payload}.${signature}`, cannot('JWS Protected Header is invalid')],
        ['header not UTF-8', `${encodeBase64Url(new Uint8Array([0x7b, 0xff, 0x7d]))}.${payload}.${signature}`, cannot('JWS Protected Header is invalid')],
        ['header of an impossible base64url length', `AAAAA.${payload}.${signature}`, cannot('JWS Protected Header is invalid')],
        ['signature of an impossible base64url length', `${valid.split('.').slice(0, 2).join('.')}.AAAAA`, cannot('Failed to base64url decode the signature')],
        ['signature too short for the curve', `${valid.split('.').slice(0, 2).join('.')}.AAAA`, SIGNATURE],
        ['payload a JSON array', await signRaw(h, [claims()], es, 'ES256'), cannot('JWT Claims Set must be a top-level JSON object')],
        ['payload not JSON', await signRaw(h, 'hello', es, 'ES256'), cannot('JWT Claims Set must be a top-level JSON object')],
        ['payload of an impossible base64url length', await signRaw(h, 'AAAAA', es, 'ES256', true), cannot('Failed to base64url decode the payload')],
        ['crit b64 true', await signRaw({ ...h, crit: ['b64'], b64: true }, claims(), es, 'ES256'), accepted],
        ['crit b64 false', await signRaw({ ...h, crit: ['b64'], b64: false }, claims(), es, 'ES256'), cannot('JWTs MUST NOT use unencoded payload')],
        ['crit b64 false, bad signature', tamper(await signRaw({ ...h, crit: ['b64'], b64: false }, claims(), es, 'ES256'), 2), SIGNATURE],
        ['b64 false without crit (ignored)', await signRaw({ ...h, b64: false }, claims(), es, 'ES256'), accepted],
        ['crit b64 without b64', await signRaw({ ...h, crit: ['b64'] }, claims(), es, 'ES256'), cannot('Extension Header Parameter "b64" is missing')],
        ['crit b64 a string', await signRaw({ ...h, crit: ['b64'], b64: 'false' }, claims(), es, 'ES256'), cannot('The "b64" (base64url-encode payload) Header Parameter must be a boolean')],
        ['crit unknown', await signRaw({ ...h, crit: ['exp'], exp: 1 }, claims(), es, 'ES256'), cannot('Extension Header Parameter "exp" is not recognized')],
        ['crit empty', await signRaw({ ...h, crit: [] }, claims(), es, 'ES256'), cannot('"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present')],
        ['crit a string', await signRaw({ ...h, crit: 'b64', b64: true }, claims(), es, 'ES256'), cannot('"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present')],
        ['crit with an empty name', await signRaw({ ...h, crit: [''] }, claims(), es, 'ES256'), cannot('"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present')],
        ['crit bad and alg none: crit is said', `${b64({ alg: 'none', crit: [] })}.${payload}.AAAA`, cannot('"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present')],
      ],
      setA,
    );
  });

  it('uses a key only when it fits the token: kid, kty and crv, alg, use, key_ops, size, public', async () => {
    const rs = (kid: string | undefined, key = rsa1.privateKey, alg = 'RS256') => signRaw(kid === undefined ? { alg } : { alg, kid }, claims(), key, alg === 'RS256' ? 'RS256' : alg);
    const esWith = (kid: unknown, alg = 'ES256') => signRaw({ alg, kid }, claims(), ec.privateKey, alg);
    const psKey = await crypto.subtle.importKey('jwk', await exportJWK(rsa1.privateKey), { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['sign']);
    await expectSame(
      [
        ['an RSA key without alg, by kid', await rs('r1'), accepted],
        ['the same key for PS256', await signRaw({ alg: 'PS256', kid: 'r1' }, claims(), psKey, 'PS256'), accepted],
        ['the other RSA key by kid', await rs('r2', rsa2.privateKey), accepted],
        ['the wrong RSA key for the kid', await rs('r2'), SIGNATURE],
        ['two RSA keys fit and no kid', await rs(undefined), cannot('multiple matching keys found in the JSON Web Key Set')],
        ['a 1024-bit RSA key', await rs('weak', weak.privateKey), cannot('RS256 requires key modulusLength to be 2048 bits or larger')],
        ['an unknown kid', await rs('r3'), SIGNATURE],
        ['a kid that is a number', await esWith(7), SIGNATURE],
        ['a key for encryption', await esWith('enc'), SIGNATURE],
        ['a key only to sign', await esWith('ops-sign'), SIGNATURE],
        ['a key to verify', await esWith('ops-verify'), accepted],
        ['key_ops with a repeat', await esWith('ops-twice'), SIGNATURE],
        ['ext not a boolean', await esWith('ext-text'), SIGNATURE],
        ['two keys with one kid', await esWith('dup'), cannot('multiple matching keys found in the JSON Web Key Set')],
        ['a P-256 key labelled ES384', await esWith('es384-only'), SIGNATURE],
        ['a P-256 key for an ES384 token', await signRaw({ alg: 'ES384', kid: 'ops-verify' }, claims(), ec.privateKey, 'ES256'), SIGNATURE],
        ['an RSA kid for an EC token', await esWith('r1'), SIGNATURE],
        ['an EC kid for an RSA token', await rs('ops-verify'), SIGNATURE],
        ['an Ed25519 key by kid', await signRaw({ alg: 'EdDSA', kid: 'ed' }, claims(), ed.privateKey, 'EdDSA'), accepted],
        ['an Ed25519 kid for an EC token', await esWith('ed'), SIGNATURE],
      ],
      setB,
    );
  });

  it('refuses a private key published in the set and a key WebCrypto cannot import, saying the runtime\'s reason', async () => {
    const issuer = issuerServing(setB);
    const priv = await signRaw({ alg: 'ES256', kid: 'private' }, claims(), ec.privateKey, 'ES256');
    expect(await issuer.verify(priv, AUDIENCES, AGENTS)).toEqual(cannot('JSON Web Key Set members must be public keys'));
    expect(await issuer.verify(priv, AUDIENCES, AGENTS)).toEqual(await joseVerify(priv, setB));
    const broken = await signRaw({ alg: 'ES256', kid: 'broken' }, claims(), ec.privateKey, 'ES256');
    const verdict = await issuer.verify(broken, AUDIENCES, AGENTS);
    expect(verdict).toEqual(await joseVerify(broken, setB));
    expect((verdict as { refused: string }).refused).toMatch(/^the token cannot be verified: ./);
  });
});
