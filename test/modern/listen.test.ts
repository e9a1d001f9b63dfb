/**
 * `subscriptions/listen` through the real stack (the worker under Deno, the sidecar CLI): a
 * modern agent's listen stream opens with the acknowledgement, carries the change notifications
 * its filter asked for, each tagged with its subscription id, and ends upstream when the agent
 * closes it.
 * - From a legacy server (server-everything from npm): the host subscribes the watched URIs on
 *   the agent's instance and fans its `list_changed` and `resources/updated` notifications out.
 * - From a modern stdio server (the modern echo fixture): the listen is passed through, its ids
 *   remapped both ways, and closing the stream cancels it on the server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { openListen } from './listen-client.ts';
import { modernPost } from './modern-client.ts';

let stack: Stack;
const url = (server: string) => `${stack.url}/servers/${server}/mcp`;
const SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
const WATCHED = 'demo://resource/dynamic/text/1';
const textOf = (answer: { response: Record<string, any> }): string => answer.response.result?.content?.[0]?.text;

beforeAll(async () => {
  stack = await startStack({ servers: { everything: everythingServer(), modern: fixtureServer('modern-echo-server.mjs') } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

const channels = async () => (await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')!.channels;
async function untilNoChannels(): Promise<number> {
  const deadline = Date.now() + 10_000;
  while ((await channels()) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  return channels();
}

describe('subscriptions/listen on a legacy server', () => {
  it('acknowledges first, then delivers only what each filter asked for, tagged with its own id', async () => {
    const token = stack.tokens.alice!;
    const lists = await openListen(url('everything'), token, 'lists', { resourcesListChanged: true, promptsListChanged: true, resourceSubscriptions: [WATCHED] });
    expect(lists.status).toBe(200);
    expect(lists.headers.get('content-type')).toContain('text/event-stream');
    expect(lists.headers.get('mcp-session-id')).toBeNull();
    expect(await lists.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SUBSCRIPTION]: 'lists' }, notifications: { resourcesListChanged: true, promptsListChanged: true, resourceSubscriptions: [WATCHED] } },
    });
    const tools = await openListen(url('everything'), token, 7, { toolsListChanged: true, resourceSubscriptions: [WATCHED] });
    expect((await tools.next()).params).toEqual({ _meta: { [SUBSCRIPTION]: 7 }, notifications: { toolsListChanged: true, resourceSubscriptions: [WATCHED] } });
    try {
      // A new session resource changes the resource list: only the stream that asked hears of it.
      const gzip = await modernPost(url('everything'), token, 'tools/call', { name: 'gzip-file-as-resource', arguments: { name: 'note.gz', data: 'data:text/plain,hello', outputType: 'resourceLink' } });
      expect(gzip.response.result.resultType).toBe('complete');
      expect(await lists.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/resources/list_changed', params: { _meta: { [SUBSCRIPTION]: 'lists' } } });
      // Updates of the watched resource reach both streams, the first thing the second one gets.
      await modernPost(url('everything'), token, 'tools/call', { name: 'toggle-subscriber-updates', arguments: {} });
      expect(await lists.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { _meta: { [SUBSCRIPTION]: 'lists' }, uri: WATCHED } });
      expect(await tools.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { _meta: { [SUBSCRIPTION]: 7 }, uri: WATCHED } });
    } finally {
      await lists.close();
      await tools.close();
    }
    expect(await untilNoChannels()).toBe(0);
  });

  it('refuses a listen without a filter with -32602, as JSON', async () => {
    const answer = await modernPost(url('everything'), stack.tokens.alice!, 'subscriptions/listen', {}, { id: 'bad' });
    expect(answer.sse).toBe(false);
    expect(answer.response).toMatchObject({ id: 'bad', error: { code: -32602, message: expect.stringContaining('params.notifications') } });
  });
});

describe('subscriptions/listen on a modern stdio server', () => {
  it("passes the listen through: the server's acknowledgement and notifications under the agent's id, cancelled upstream on close", async () => {
    const token = stack.tokens.alice!;
    const stream = await openListen(url('modern'), token, 'modern-listen', { toolsListChanged: true, promptsListChanged: true });
    expect(await stream.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SUBSCRIPTION]: 'modern-listen' }, notifications: { toolsListChanged: true } },
    });
    expect(textOf(await modernPost(url('modern'), token, 'tools/call', { name: 'touch-tools', arguments: {} }))).toBe('Notified 1');
    expect(await stream.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUBSCRIPTION]: 'modern-listen' } } });
    await stream.close();
    expect(await untilNoChannels()).toBe(0);
    // The server heard the cancellation: its listen is gone.
    const deadline = Date.now() + 10_000;
    let notified = '';
    while ((notified = textOf(await modernPost(url('modern'), token, 'tools/call', { name: 'touch-tools', arguments: {} }))) !== 'Notified 0' && Date.now() < deadline);
    expect(notified).toBe('Notified 0');
  });
});

describe('the worker under Deno', () => {
  it("prints no warning of Deno's own while listen streams open and close: it reads request.signal only to see an agent leave", async () => {
    // Deno's legacy behaviour aborts request.signal after every answer too, and warns about that
    // at the first read; the launcher opts out of it. A listen reads the signal at once.
    const stream = await openListen(url('everything'), stack.tokens.alice!, 'quiet', { toolsListChanged: true });
    expect((await stream.next()).method).toBe('notifications/subscriptions/acknowledged');
    await stream.close();
    expect(await untilNoChannels()).toBe(0);
    expect(stack.worker.err.text).not.toMatch(/Deno\.serve|legacy[- ]abort|legacy behavior/i);
  });
});
