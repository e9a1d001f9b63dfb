import { describe, expect, it } from 'vitest';
import { encodeBase64Url } from '../../../shared/base64url.ts';
import { Grants, REFRESH_REUSE_GRACE_MS } from './grants.ts';
import { sha256Hex } from './oauth-crypto.ts';
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

  it('tells of each grant it ends, by the id its access tokens name and its agent, before the request that ended it is answered', async () => {
    const told: Array<Array<string | undefined>> = [];
    let clock = 0;
    const grants = new Grants(FileOAuthStore.inMemory({ now: () => clock }), { accessTtlMs: 60_000, refreshTtlMs: 86_400_000, now: () => clock, onEnded: (id, why, agent) => void told.push([id, why, agent]) });
    const issue = async () => {
      const code = await grants.createCode({
        clientId: 'client', redirectUri: 'http://127.0.0.1/cb', redirectUriSent: true, codeChallenge: await challengeOf(VERIFIER),
        resource: 'http://127.0.0.1:8787', scope: 'mcp', agent: 'alice', agentTokenSha256: 'a', approverTokenSha256: 'a',
      });
      const tokens = await grants.redeemCode({ code, clientId: 'client', redirectUri: 'http://127.0.0.1/cb', codeVerifier: VERIFIER });
      return { tokens, grant: (await grants.verifyAccessToken(tokens.access_token))!.grant };
    };
    const revoked = await issue();
    expect(revoked.grant).toMatchObject({ agent: 'alice', agentTokenSha256: 'a', approverTokenSha256: 'a' });
    await grants.revoke(revoked.tokens.refresh_token!, 'client');
    const reused = await issue();
    await grants.refresh({ refreshToken: reused.tokens.refresh_token!, clientId: 'client' });
    clock += REFRESH_REUSE_GRACE_MS + 1;
    await expect(grants.refresh({ refreshToken: reused.tokens.refresh_token!, clientId: 'client' })).rejects.toThrow();
    expect(told).toEqual([
      [revoked.grant.id, 'its OAuth grant was revoked by the app', 'alice'],
      [reused.grant.id, 'its OAuth grant was revoked: a replaced refresh token of it was presented again', 'alice'],
    ]);
  });

  describe('refresh tokens', () => {
    const REUSED = 'The refresh token was already used: the grant is revoked (sign in again)';

    /** A grant signed in once, on a state file whose records the test can count, with a clock it moves. */
    async function signedIn() {
      const clock = { now: Date.now() };
      let state = '{}';
      const store = await FileOAuthStore.open({ read: async () => null, write: async (text) => void (state = text) }, { now: () => clock.now });
      const grants = new Grants(slowStore(store), { accessTtlMs: 60_000, refreshTtlMs: 86_400_000, now: () => clock.now });
      const code = await grants.createCode({
        clientId: 'client', redirectUri: 'http://127.0.0.1/cb', redirectUriSent: true, codeChallenge: await challengeOf(VERIFIER),
        resource: 'http://127.0.0.1:8787', scope: 'mcp', agent: 'alice', agentTokenSha256: 'a', approverTokenSha256: 'a',
      });
      const tokens = await grants.redeemCode({ code, clientId: 'client', redirectUri: 'http://127.0.0.1/cb', codeVerifier: VERIFIER });
      const refresh = (refreshToken: string) => grants.refresh({ refreshToken, clientId: 'client' });
      const refused = (refreshToken: string) => refresh(refreshToken).then(() => 'refreshed', (e: Error) => e.message);
      const records = async (kind: string) => {
        await store.flushed();
        return Object.keys((JSON.parse(state) as { records: Record<string, unknown> }).records).filter((key) => key.startsWith(`${kind}:`)).length;
      };
      return { clock, store, grants, tokens, refresh, refused, records };
    }

    it('gives every use of one token within the grace the same successor, so a token used twice never forks into two live chains', async () => {
      const { clock, grants, tokens, refresh, refused } = await signedIn();
      const together = await Promise.all([refresh(tokens.refresh_token!), refresh(tokens.refresh_token!), refresh(tokens.refresh_token!)]);
      clock.now += 5_000;
      // Whoever else held the token, presenting it within the grace, gets the client's own successor, not a chain of its own.
      const other = await refresh(tokens.refresh_token!);
      const successors = new Set([...together, other].map((t) => t.refresh_token));
      // The same access token too: one record however many uses the grace lets through.
      expect([successors.size, new Set([...together, other].map((t) => t.access_token)).size]).toEqual([1, 1]);

      const next = await refresh(other.refresh_token!);
      clock.now += REFRESH_REUSE_GRACE_MS + 1;
      // The other holder's copy of the successor is now a reuse, and ends the grant for both.
      expect(await refused(other.refresh_token!)).toBe(REUSED);
      expect(await grants.verifyAccessToken(next.access_token)).toBeNull();
      expect(await refused(next.refresh_token!)).toBe('The refresh token is unknown, expired or revoked');
    });

    it('keeps a handful of records for a grant however often it is refreshed', async () => {
      const { clock, tokens, refresh, records } = await signedIn();
      let current = tokens;
      for (let i = 0; i < 300; i += 1) {
        clock.now += 61_000;
        current = await refresh(current.refresh_token!);
      }
      // The last two use marks; one live access token (each lives 60 s); the grant.
      expect([await records('refresh'), await records('access'), await records('grant')]).toEqual([2, 1, 1]);
      expect((await refresh(current.refresh_token!)).refresh_token).toMatch(/^syr_[A-Za-z0-9_-]{43}\.301\.[A-Za-z0-9_-]{43}$/);
    });

    it('keeps two live access tokens for a grant refreshed again and again within their lifetime, the client\'s last two (review s25: each refresh left one for an hour)', async () => {
      const { clock, grants, tokens, refresh, records } = await signedIn();
      const issued = [tokens];
      for (let i = 0; i < 100; i += 1) {
        clock.now += 100;
        issued.push(await refresh(issued.at(-1)!.refresh_token!));
      }
      expect([await records('refresh'), await records('access'), await records('grant')]).toEqual([2, 2, 1]);
      const live = await Promise.all(issued.slice(-3).map(async (t) => (await grants.verifyAccessToken(t.access_token))?.agent ?? null));
      expect(live).toEqual([null, 'alice', 'alice']);
      expect(await grants.verifyAccessToken(tokens.access_token)).toBeNull();
    });

    it('gives a use within the grace that asks for another resource an access token of its own, bound to it', async () => {
      const { grants, tokens } = await signedIn();
      const whole = await grants.refresh({ refreshToken: tokens.refresh_token!, clientId: 'client' });
      const narrowed = await grants.refresh({ refreshToken: tokens.refresh_token!, clientId: 'client', resource: 'http://127.0.0.1:8787/mcp' });
      expect(narrowed.refresh_token).toBe(whole.refresh_token);
      expect(narrowed.access_token).not.toBe(whole.access_token);
      expect([(await grants.verifyAccessToken(whole.access_token))?.resource, (await grants.verifyAccessToken(narrowed.access_token))?.resource]).toEqual(['http://127.0.0.1:8787', 'http://127.0.0.1:8787/mcp']);
    });

    it('still honours an access token from before chains, found by its hash, until its grant ends', async () => {
      const { clock, store, grants, tokens } = await signedIn();
      const grantId = /^sya_([^.]+)\./.exec(tokens.access_token)![1]!;
      const older = `sya_${'B'.repeat(43)}`;
      await store.put('access', await sha256Hex(older), { grantId }, clock.now + 60_000);
      expect((await grants.verifyAccessToken(older))?.agent).toBe('alice');
      await grants.revoke(older, 'client');
      expect(await grants.verifyAccessToken(tokens.access_token)).toBeNull();
    });

    it('refuses an access token of a chain whose secret is not the one issued', async () => {
      const { grants, tokens } = await signedIn();
      const [, grant, generation] = /^sya_([^.]+)\.(\d+)\./.exec(tokens.access_token)!;
      expect(await grants.verifyAccessToken(`sya_${grant}.${generation}.${'A'.repeat(43)}`)).toBeNull();
      expect((await grants.verifyAccessToken(tokens.access_token))?.agent).toBe('alice');
    });

    it('revokes the grant when a token replaced many generations ago comes back, though its records are pruned', async () => {
      const { clock, grants, tokens, refresh, refused } = await signedIn();
      const chain = [tokens];
      for (let i = 0; i < 5; i += 1) {
        clock.now += 61_000;
        chain.push(await refresh(chain.at(-1)!.refresh_token!));
      }
      expect(await refused(chain[1]!.refresh_token!)).toBe(REUSED);
      expect(await grants.verifyAccessToken(chain.at(-1)!.access_token)).toBeNull();
    });

    it('keeps a grant revoked while a refresh of it is under way: what the refresh hands out does not work (review s20)', async () => {
      for (let trial = 0; trial < 10; trial++) {
        const { grants, tokens, refresh } = await signedIn();
        const [refreshed] = await Promise.all([refresh(tokens.refresh_token!).catch(() => null), grants.revoke(tokens.access_token, 'client')]);
        expect(await grants.verifyAccessToken(tokens.access_token)).toBeNull();
        if (refreshed === null) continue;
        expect(await grants.verifyAccessToken(refreshed.access_token)).toBeNull();
        await expect(refresh(refreshed.refresh_token!)).rejects.toThrow(/unknown, expired or revoked/);
      }
    });

    it('lets another client\'s request naming the grant end nothing, even with a generation long replaced (review s20)', async () => {
      const { clock, grants, tokens, refresh } = await signedIn();
      let current = tokens;
      for (let i = 0; i < 3; i++) {
        clock.now += 61_000;
        current = await refresh(current.refresh_token!);
      }
      const [, grant] = /^syr_([^.]+)\./.exec(current.refresh_token!)!;
      await expect(grants.refresh({ refreshToken: `syr_${grant}.0.${'A'.repeat(43)}`, clientId: 'stranger' })).rejects.toThrow('The refresh token was issued to another client');
      expect(await grants.verifyAccessToken(current.access_token)).not.toBeNull();
    });

    it('refuses a token naming the grant\'s live generation with another secret, and revokes nothing', async () => {
      const { tokens, refresh, refused } = await signedIn();
      const [, grant, generation] = /^syr_([^.]+)\.(\d+)\./.exec(tokens.refresh_token!)!;
      const forged = `syr_${grant}.${generation}.${'A'.repeat(43)}`;
      const ahead = `syr_${grant}.${Number(generation) + 1}.${'A'.repeat(43)}`;
      expect([await refused(forged), await refused(ahead)]).toEqual(['The refresh token is unknown, expired or revoked', 'The refresh token is unknown, expired or revoked']);
      expect((await refresh(tokens.refresh_token!)).refresh_token).toMatch(/^syr_/);
    });

    it('revokes the grant for its latest refresh token (RFC 7009), and ignores a forged one', async () => {
      const { grants, tokens, refresh } = await signedIn();
      const next = await refresh(tokens.refresh_token!);
      const [, grant] = /^syr_([^.]+)\./.exec(next.refresh_token!)!;
      await grants.revoke(`syr_${grant}.1.${'A'.repeat(43)}`, 'client');
      expect(await grants.verifyAccessToken(next.access_token)).not.toBeNull();
      await grants.revoke(next.refresh_token!, 'client');
      expect(await grants.verifyAccessToken(next.access_token)).toBeNull();
    });

    it('turns a refresh token from before chains into a chain, giving its uses within the grace one successor', async () => {
      const { clock, store, grants, tokens, refresh, refused } = await signedIn();
      const [, grant] = /^syr_([^.]+)\./.exec(tokens.refresh_token!)!;
      const single = `syr_${'s'.repeat(43)}`;
      await store.put('refresh', await sha256Hex(single), { grantId: grant! }, clock.now + 86_400_000);
      const together = await Promise.all([refresh(single), refresh(single)]);
      expect(together[0].refresh_token).toBe(together[1].refresh_token);
      expect(together[0].refresh_token).toMatch(new RegExp(`^syr_${grant}\\.0\\.`));
      const next = await refresh(together[0].refresh_token!);
      clock.now += REFRESH_REUSE_GRACE_MS + 1;
      expect(await refused(single)).toBe(REUSED);
      expect(await grants.verifyAccessToken(next.access_token)).toBeNull();
    });

    it('refuses, without revoking, a token from before chains that the version before the upgrade used moments ago', async () => {
      const { clock, store, tokens, refresh, refused } = await signedIn();
      const [, grant] = /^syr_([^.]+)\./.exec(tokens.refresh_token!)!;
      const single = `syr_${'t'.repeat(43)}`;
      const id = await sha256Hex(single);
      await store.put('refresh', id, { grantId: grant! }, clock.now + 86_400_000);
      await store.put('refresh', `${id}.used`, { at: clock.now }, clock.now + 86_400_000);
      expect(await refused(single)).toMatch(/^The refresh token was used moments ago by the version of this worker before its upgrade: /);
      expect((await refresh(tokens.refresh_token!)).refresh_token).toMatch(/^syr_/);
    });
  });
});
