/**
 * The JWS algorithms an external issuer's tokens may use: asymmetric ones only (RFC 7518 §3.3–3.5,
 * RFC 8037), so a key published for verification can never be used to mint, and never `none`.
 * Each names the key type (and curve) a key must have to be used with it, and the WebCrypto
 * parameters to import that key and to verify with it.
 *
 * @module
 */

export interface JwsAlgorithm {
  kty: 'RSA' | 'EC' | 'OKP';
  crv?: string;
  importParams: RsaHashedImportParams | EcKeyImportParams | Algorithm;
  verifyParams: Algorithm | RsaPssParams | EcdsaParams;
}

function rsa(bits: number, saltLength?: number): JwsAlgorithm {
  const importParams = { name: saltLength === undefined ? 'RSASSA-PKCS1-v1_5' : 'RSA-PSS', hash: `SHA-${bits}` };
  return { kty: 'RSA', importParams, verifyParams: saltLength === undefined ? importParams : { ...importParams, saltLength } };
}

function ecdsa(crv: string, bits: number): JwsAlgorithm {
  return { kty: 'EC', crv, importParams: { name: 'ECDSA', namedCurve: crv }, verifyParams: { name: 'ECDSA', hash: `SHA-${bits}` } };
}

const ed25519 = { name: 'Ed25519' };

export const JWS_ALGORITHMS: ReadonlyMap<string, JwsAlgorithm> = new Map([
  ['RS256', rsa(256)],
  ['RS384', rsa(384)],
  ['RS512', rsa(512)],
  ['PS256', rsa(256, 32)],
  ['PS384', rsa(384, 48)],
  ['PS512', rsa(512, 64)],
  ['ES256', ecdsa('P-256', 256)],
  ['ES384', ecdsa('P-384', 384)],
  ['ES512', ecdsa('P-521', 512)],
  ['EdDSA', { kty: 'OKP', crv: 'Ed25519', importParams: ed25519, verifyParams: ed25519 }],
]);

/** RSA keys shorter than this are refused (RFC 7518 §3.3). */
export const MIN_RSA_BITS = 2048;
