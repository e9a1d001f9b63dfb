import { describe, expect, it } from 'vitest';
import { FileOAuthStore, type StateFileAccess } from './file-oauth-store.ts';

function memoryFile(initial: string | null = null): StateFileAccess & { text: string | null; writes: number } {
  const file = {
    text: initial,
    writes: 0,
    async read() {
      return file.text;
    },
    async write(text: string) {
      file.writes++;
      file.text = text;
    },
  };
  return file;
}

describe('FileOAuthStore', () => {
  it('writes every change through, and a reopened store sees it (a restart loses nothing)', async () => {
    const file = memoryFile();
    const store = await FileOAuthStore.open(file);
    await store.put('grant', 'g1', { agent: 'alice' }, null);
    await store.put('access', 'a1', { grantId: 'g1' }, Date.now() + 60_000);
    const again = await FileOAuthStore.open(file);
    expect(await again.get('grant', 'g1')).toEqual({ agent: 'alice' });
    expect(await again.get('access', 'a1')).toEqual({ grantId: 'g1' });
  });

  it('take hands a record to exactly one of two concurrent callers', async () => {
    const store = await FileOAuthStore.open(memoryFile());
    await store.put('code', 'c1', { grantId: 'g' }, null);
    const results = await Promise.all([store.take('code', 'c1'), store.take('code', 'c1')]);
    expect(results.filter((r) => r !== undefined)).toEqual([{ grantId: 'g' }]);
  });

  it('add keeps the first of two concurrent values, gives both callers that one, and writes only when it adds', async () => {
    const file = memoryFile();
    const store = await FileOAuthStore.open(file);
    expect(await Promise.all([store.add('key', 'k', 'first', null), store.add('key', 'k', 'second', null)])).toEqual(['first', 'first']);
    expect(file.writes).toBe(1);
    expect(await (await FileOAuthStore.open(file)).get('key', 'k')).toBe('first');
  });

  it('forgets expired records, on read and in the file', async () => {
    let now = 1_000;
    const file = memoryFile();
    const store = await FileOAuthStore.open(file, { now: () => now });
    await store.put('code', 'old', { x: 1 }, 2_000);
    now = 3_000;
    expect(await store.get('code', 'old')).toBeUndefined();
    await store.put('code', 'new', { x: 2 }, null);
    expect(file.text).not.toContain('old');
  });

  it('refuses a corrupt state file instead of starting empty', async () => {
    await expect(FileOAuthStore.open(memoryFile('{not json'))).rejects.toThrow(/Cannot read the OAuth state file: not valid JSON/);
    await expect(FileOAuthStore.open(memoryFile('{"format":"other"}'))).rejects.toThrow(/expected format "switchyard-oauth-state\/1"/);
  });

  it('keeps no record added whose write failed, so a server key is never used unsaved', async () => {
    let fail = true;
    const store = await FileOAuthStore.open({ read: async () => null, write: async () => { if (fail) throw new Error('disk full'); } });
    await expect(store.add('key', 'hmac-sha256', { secret: 'a' }, null)).rejects.toThrow('disk full');
    expect(await store.get('key', 'hmac-sha256')).toBeUndefined();
    fail = false;
    expect(await store.add('key', 'hmac-sha256', { secret: 'b' }, null)).toEqual({ secret: 'b' });
  });
});
