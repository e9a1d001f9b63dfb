import { describe, expect, it } from 'vitest';
import { FAILURE_TTL_MS, MetadataDocumentClients, parseMetadataDocument } from './metadata-document.ts';

const DOC_URL = 'https://app.example/client.json';
const doc = (url: string) => ({ client_id: url, client_name: 'App', redirect_uris: ['https://app.example/cb'] });

describe('client metadata documents, fetched for strangers', () => {
  it('does not fetch a document that just failed again until a minute has passed, and says the same', async () => {
    let now = 0;
    const fetched: string[] = [];
    const clients = new MetadataDocumentClients({ now: () => now, fetch: async (url) => (fetched.push(url), new Response('gone', { status: 404 })) });
    const first = await clients.get(DOC_URL).catch((e: unknown) => e);
    expect(await clients.get(DOC_URL).catch((e: unknown) => e)).toBe(first);
    expect(first).toMatchObject({ code: 'invalid_client', message: 'Cannot fetch the client metadata document: it answered 404' });
    expect(fetched).toEqual([DOC_URL]);
    now += FAILURE_TTL_MS;
    await expect(clients.get(DOC_URL)).rejects.toMatchObject({ code: 'invalid_client' });
    expect(fetched).toEqual([DOC_URL, DOC_URL]);
  });

  it('says why a host does not resolve by its kind, never in the resolver\'s own words, which the sign-in page would show', async () => {
    const refusal = async (error: Error) => {
      const clients = new MetadataDocumentClients({ network: { resolve: async () => { throw error; }, connectTls: () => Promise.reject(new Error('never connects')) } });
      return ((await clients.get(DOC_URL).catch((e: unknown) => e)) as Error).message;
    };
    const deno = Object.assign(new Error('proto error: no records found for Query { name: Name("app.example.") }'), { name: 'NotFound' });
    expect(await refusal(deno)).toBe('Cannot resolve the client metadata host "app.example": the name has no address');
    expect(await refusal(Object.assign(new Error('getaddrinfo ENOTFOUND app.example'), { code: 'ENOTFOUND' }))).toBe('Cannot resolve the client metadata host "app.example": the name has no address');
    expect(await refusal(Object.assign(new Error('queryA ETIMEOUT app.example'), { code: 'ETIMEOUT' }))).toBe('Cannot resolve the client metadata host "app.example": the lookup failed (ETIMEOUT)');
  });

  it('counts only failed fetches, per host: junk under one host is refused with temporarily_unavailable for a minute, and holds back no other host', async () => {
    let now = 0;
    let fetches = 0;
    const clients = new MetadataDocumentClients({
      now: () => now,
      fetchesPerHostPerMinute: 2,
      fetch: async (url) => (fetches++, new URL(url).hostname === 'junk.example' ? new Response('no', { status: 404 }) : Response.json(doc(url))),
    });
    await expect(clients.get('https://junk.example/1')).rejects.toMatchObject({ code: 'invalid_client' });
    await expect(clients.get('https://junk.example/2')).rejects.toMatchObject({ code: 'invalid_client' });
    const refused = await clients.get('https://junk.example/3').catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'temporarily_unavailable', status: 429, message: 'Too many client metadata documents from "junk.example" failed in the last minute: try again in 1 min' });
    expect(fetches).toBe(2);
    // Another host, and documents that are fetched well (however many), cost nothing.
    for (let i = 0; i < 10; i++) expect((await clients.get(`https://app.example/c${i}.json`)).clientName).toBe('App');
    now += 60_000;
    await expect(clients.get('https://junk.example/3')).rejects.toMatchObject({ code: 'invalid_client' });
  });

  it('serves a known client from its cache and fetches it again when its lifetime is over without a budget, however much junk strangers sent', async () => {
    let now = 0;
    const fetched: string[] = [];
    const clients = new MetadataDocumentClients({
      now: () => now,
      fetchesPerHostPerMinute: 1,
      fetch: async (url) => (fetched.push(url), url === DOC_URL ? Response.json(doc(url), { headers: { 'cache-control': 'max-age=300' } }) : new Response('no', { status: 404 })),
    });
    expect((await clients.get(DOC_URL)).clientId).toBe(DOC_URL);
    // A stranger spends app.example's budget and fills the failures' cache far past its size.
    await expect(clients.get('https://app.example/junk-0')).rejects.toMatchObject({ code: 'invalid_client' });
    await expect(clients.get('https://app.example/junk-1')).rejects.toMatchObject({ code: 'temporarily_unavailable' });
    for (let i = 0; i < 2000; i++) await clients.get(`https://junk-${i}.example/c.json`).catch(() => {});
    expect((await clients.get(DOC_URL)).clientId).toBe(DOC_URL);
    expect(fetched.filter((u) => u === DOC_URL)).toHaveLength(1);
    now += 300_000;
    await expect(clients.get('https://app.example/junk-2')).rejects.toMatchObject({ code: 'invalid_client' });
    await expect(clients.get('https://app.example/junk-3')).rejects.toMatchObject({ code: 'temporarily_unavailable' });
    expect((await clients.get(DOC_URL)).clientId).toBe(DOC_URL);
    expect(fetched.filter((u) => u === DOC_URL)).toHaveLength(2);
  });

  it('keeps a client\'s cached document however many documents a stranger serves from another host, with junk under the client\'s own host every minute', async () => {
    let now = 0;
    const clients = new MetadataDocumentClients({
      now: () => now,
      fetch: async (url) => {
        const u = new URL(url);
        if (u.hostname === 'app.example' && url !== DOC_URL) return new Response('not found', { status: 404 });
        return Response.json(doc(url));
      },
    });
    expect((await clients.get(DOC_URL)).clientName).toBe('App');
    for (let minute = 0; minute < 3; minute++) {
      for (let i = 0; i < 300; i++) await clients.get(`https://evil.example/d${minute}-${i}`);
      for (let i = 0; i < 10; i++) await clients.get(`https://app.example/junk-${minute}-${i}`).catch(() => {});
      expect((await clients.get(DOC_URL)).clientName).toBe('App');
      now += 60_000;
    }
  });

  it('fetches a document of a client a person approved even when its host\'s failed-fetch budget is spent', async () => {
    const clients = new MetadataDocumentClients({ now: () => 0, fetchesPerHostPerMinute: 1, fetch: async (url) => (url === DOC_URL ? Response.json(doc(url)) : new Response('no', { status: 404 })) });
    await expect(clients.get('https://app.example/junk')).rejects.toMatchObject({ code: 'invalid_client' });
    await expect(clients.get(DOC_URL)).rejects.toMatchObject({ code: 'temporarily_unavailable' });
    let asked = 0;
    expect((await clients.get(DOC_URL, { granted: async () => (asked++, true) })).clientName).toBe('App');
    expect(asked).toBe(1);
  });
});

describe('client metadata documents fetched at once', () => {
  it('fetches at most so many at once, refusing strangers past them with temporarily_unavailable, never a client a person approved', async () => {
    const waiting: Array<() => void> = [];
    const fetched: string[] = [];
    let hold = true;
    const clients = new MetadataDocumentClients({
      now: () => 0,
      concurrentFetches: 2,
      // While `hold`, each answer waits to be let go, as a server that holds its answer would.
      fetch: (url) => {
        fetched.push(url);
        const answer = () => Response.json(doc(url));
        return hold ? new Promise<Response>((resolve) => waiting.push(() => resolve(answer()))) : Promise.resolve(answer());
      },
    });
    const held = [clients.get('https://a.example/c.json'), clients.get('https://b.example/c.json')];
    const refused = await clients.get('https://c.example/c.json').catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'temporarily_unavailable', status: 503, message: '2 client metadata documents are being fetched already: try again in a few seconds' });
    let asked = 0;
    const approved = clients.get('https://d.example/c.json', { granted: async () => (asked++, true) });
    hold = false;
    while (waiting.length > 0) waiting.shift()!();
    expect((await Promise.all([...held, approved])).map((c) => c.clientId)).toEqual(['https://a.example/c.json', 'https://b.example/c.json', 'https://d.example/c.json']);
    expect(asked).toBe(1);
    // Refused for the crowd, not for itself: not remembered as a failure, and fetched once there is room.
    expect((await clients.get('https://c.example/c.json')).clientId).toBe('https://c.example/c.json');
    expect(fetched).toEqual(['https://a.example/c.json', 'https://b.example/c.json', 'https://d.example/c.json', 'https://c.example/c.json']);
  });
});

describe('a client metadata document read', () => {
  it('marks a client whose grant types leave out refresh_token, so its grants issue no refresh token (RFC 7591 §2)', () => {
    const read = (grantTypes?: string[]) => parseMetadataDocument(DOC_URL, JSON.stringify({ ...doc(DOC_URL), ...(grantTypes !== undefined ? { grant_types: grantTypes } : {}) })).refreshGrant;
    expect([read(['authorization_code']), read(['authorization_code', 'refresh_token']), read()]).toEqual([false, undefined, undefined]);
  });
});
