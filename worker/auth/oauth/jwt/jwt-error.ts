/**
 * Why a JWT was refused, as a code the external issuer turns into the refusal an agent reads:
 * `expired` (its `exp` passed), `unexpiring` (it has no `exp`, which RFC 9068 §2.2 requires of
 * an access token), `claim` (another claim failed: `claim` names it), `signature` (it does not
 * verify, or no key of the issuer's set fits it), `algorithm` (its `alg` is not accepted),
 * `invalid` (it is malformed or cannot be checked; the message says how).
 *
 * @module
 */

export type JwtRefusal = 'expired' | 'unexpiring' | 'claim' | 'signature' | 'algorithm' | 'invalid';

export class JwtError extends Error {
  constructor(
    readonly code: JwtRefusal,
    message: string,
    readonly claim?: string,
  ) {
    super(message);
  }
}

/** A token or key set that is malformed or cannot be checked (`invalid`); `message` says how. */
export const invalidJwt = (message: string) => new JwtError('invalid', message);
