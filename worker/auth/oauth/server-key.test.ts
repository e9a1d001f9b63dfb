import { describe, expect, it } from 'vitest';
import { ServerKey } from './server-key.ts';
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
});
