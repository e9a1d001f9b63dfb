import { describe, expect, it } from 'vitest';
import { encodeBase64Url } from '../../../shared/base64url.ts';
import { Grants } from './grants.ts';
import type { OAuthStore } from './oauth-store.ts';
import { FileOAuthStore } from './store/file-oauth-store.ts';

const VERIFIER = 'v'.repeat(43);

async function challengeOf(verifier: string): Promise<string> {
  return encodeBase64Url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

/** A store each of whose answers comes a turn of the event loop late, as one on disk or in a Durable Object does: two redemptions at once both look before either marks the code. */
function slowStore(store: OAuthStore): OAuthStore {
  const late = async <T>(work: Promise<T>): Promise<T> => {
    const value = await work;
    await new Promise((resolve) => setTimeout(resolve, 0));
    return value;
  };
  return {
    get: (kind, id) => late(store.get(kind, id)),
    put: (kind, id, value, expiresAt) => late(store.put(kind, id, value, expiresAt)),
    delete: (kind, id) => late(store.delete(kind, id)),
    take: (kind, id) => late(store.take(kind, id)),
    add: (kind, id, value, expiresAt) => late(store.add(kind, id, value, expiresAt)),
  };
}

describe('Grants', () => {
  it('leaves no token working when a code is redeemed twice at once: the second redemption revokes, as a replay does', async () => {
    const grants = new Grants(slowStore(FileOAuthStore.inMemory()), { accessTtlMs: 60_000, refreshTtlMs: 86_400_000 });
    const code = await grants.createCode({
      clientId: 'client', redirectUri: 'http://127.0.0.1/cb', redirectUriSent: true, codeChallenge: await challengeOf(VERIFIER),
      resource: 'http://127.0.0.1:8787', scope: 'mcp', agent: 'alice', agentTokenSha256: 'a', approverTokenSha256: 'a',
    });
    const redeem = () => grants.redeemCode({ code, clientId: 'client', redirectUri: 'http://127.0.0.1/cb', codeVerifier: VERIFIER }).then((t) => t, (e: Error) => e);
    const outcomes = await Promise.all([redeem(), redeem()]);
    const issued = outcomes.flatMap((o) => (o instanceof Error ? [] : [o.access_token]));
    expect(outcomes.filter((o) => o instanceof Error).map((o) => (o as Error).message)).toContain('The authorization code was already used: every token issued from it is revoked');
    for (const token of issued) expect(await grants.verifyAccessToken(token)).toBeNull();
  });
});
