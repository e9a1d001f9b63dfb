import { describe, expect, it } from 'vitest';
import { FAILURE_TTL_MS, MetadataDocumentClients } from './metadata-document.ts';

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

  it('fetches so many new documents a minute at most, then refuses with temporarily_unavailable until the minute has passed', async () => {
    let now = 0;
    let fetches = 0;
    const clients = new MetadataDocumentClients({ now: () => now, fetchesPerMinute: 2, fetch: async (url) => (fetches++, Response.json(doc(url))) });
    expect((await clients.get('https://a.example/c.json')).clientName).toBe('App');
    await clients.get('https://b.example/c.json');
    await expect(clients.get('https://c.example/c.json')).rejects.toMatchObject({ code: 'temporarily_unavailable', status: 429 });
    // A cached one costs no fetch.
    expect((await clients.get('https://a.example/c.json')).clientId).toBe('https://a.example/c.json');
    expect(fetches).toBe(2);
    now += 60_000;
    await clients.get('https://c.example/c.json');
    expect(fetches).toBe(3);
  });
});
