import { describe, expect, it } from 'vitest';
import { parseServerKeys, ServerKey } from './server-key.ts';
import { encodeBase64Url } from '../../../shared/base64url.ts';

const newKey = () => encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)));
import { FileOAuthStore } from './store/file-oauth-store.ts';

describe('ServerKey', () => {
  it('opens what it sealed, for that purpose only, and nothing altered', async () => {
    const key = new ServerKey(FileOAuthStore.inMemory());
    const sealed = await key.seal('consent', { c: 'client', e: 1 });
    expect(await key.open('consent', sealed)).toEqual({ c: 'client', e: 1 });
    expect(await key.open('client-id', sealed)).toBeUndefined();
    const [body, mac] = sealed.split('.') as [string, string];
    expect(await key.open('consent', `${body}x.${mac}`)).toBeUndefined();
    expect(await key.open('consent', `${body}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`)).toBeUndefined();
    expect(await key.open('consent', body)).toBeUndefined();
  });

  it('is made once and shared through the store: another process, or isolate, over the same state opens what the first sealed', async () => {
    const store = FileOAuthStore.inMemory();
    const [a, b] = [new ServerKey(store), new ServerKey(store)];
    const [sealedA, sealedB] = await Promise.all([a.seal('client-id', 'a'), b.seal('client-id', 'b')]);
    expect([await b.open('client-id', sealedA), await a.open('client-id', sealedB)]).toEqual(['a', 'b']);
    expect(await new ServerKey(FileOAuthStore.inMemory()).open('client-id', sealedA)).toBeUndefined();
  });

  it('refuses a malformed key in the state, saying which record and what removing it does', async () => {
    const store = FileOAuthStore.inMemory();
    await store.put('key', 'hmac-sha256', { secret: 'short', createdAt: 0 }, null);
    await expect(new ServerKey(store).mac('consent', 'x')).rejects.toThrow('The OAuth state holds a malformed server key (record "key:hmac-sha256"): remove it to make a new one, which ends every registered client and open sign-in form');
  });

  it('with the operator\'s keys, seals with the first, opens with any listed, and writes nothing to the state', async () => {
    const store = FileOAuthStore.inMemory();
    const [oldKey, nextKey] = [newKey(), newKey()];
    const before = new ServerKey(store, Date.now, [oldKey]);
    const sealedOld = await before.seal('client-id', 'old');
    const macOld = await before.mac('client-secret', 'id');
    expect(await store.get('key', 'hmac-sha256')).toBeUndefined();
    // Rotated: the new key seals, the old one still opens what it sealed.
    const rotating = new ServerKey(store, Date.now, [nextKey, oldKey]);
    const sealedNew = await rotating.seal('client-id', 'new');
    expect([await rotating.open('client-id', sealedOld), await rotating.open('client-id', sealedNew)]).toEqual(['old', 'new']);
    expect(await rotating.verify('client-secret', 'id', macOld)).toBe(true);
    expect(await rotating.mac('client-secret', 'id')).not.toBe(macOld);
    // The old key removed: what it sealed is refused; and the state's own key (none here) is never made.
    const after = new ServerKey(store, Date.now, [nextKey]);
    expect([await after.open('client-id', sealedOld), await after.open('client-id', sealedNew)]).toEqual([undefined, 'new']);
    expect(await after.verify('client-secret', 'id', macOld)).toBe(false);
    expect(await store.get('key', 'hmac-sha256')).toBeUndefined();
    // A key in the state is not one of the operator's: what it sealed is refused once keys are given.
    const stateSealed = await new ServerKey(store).seal('client-id', 'state');
    expect(await after.open('client-id', stateSealed)).toBeUndefined();
  });

  it('reads SWITCHYARD_OAUTH_KEYS, naming a bad key by its place and never quoting it', () => {
    const [a, b] = [newKey(), newKey()];
    expect(parseServerKeys(undefined)).toBeUndefined();
    expect(parseServerKeys(' ')).toBeUndefined();
    expect(parseServerKeys(` ${a} , ${b}`)).toEqual([a, b]);
    const refusal = (text: string) => {
      try {
        parseServerKeys(text);
        return 'taken';
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(refusal(`${a},secret-of-43-chars-but-not-quite-right!!!`)).toBe('SWITCHYARD_OAUTH_KEYS: key 2 is not a key: expected 43 base64url characters (32 random bytes), comma-separated');
    expect(refusal(`${a},`)).toBe('SWITCHYARD_OAUTH_KEYS: key 2 is not a key: expected 43 base64url characters (32 random bytes), comma-separated');
    expect(refusal(`${a},${b},${a}`)).toBe('SWITCHYARD_OAUTH_KEYS: key 3 repeats key 1');
    expect(refusal([1, 2, 3, 4, 5].map(() => newKey()).join(','))).toBe('SWITCHYARD_OAUTH_KEYS: 5 keys, at most 4: the first seals, the others are old ones kept while clients move over');
  });
});
