import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createInMemoryChannelPair, type ChannelTransport } from '../../../shared/channel-transport.ts';
import { JsonRpcPeer, type PeerHandlers, type RequestContext } from './json-rpc-peer.ts';
import { deferred } from '../../../test/support/deferred.ts';
import { ConnectionClosedError, PeerCancellation, RequestCancelledError, RequestTimeoutError, RpcError } from './peer-errors.ts';

afterEach(() => void vi.useRealTimers());

/** Everything a transport end sent, with its send options. */
function recordSends(transport: ChannelTransport): Array<{ message: JSONRPCMessage; options: TransportSendOptions | undefined }> {
  const sent: Array<{ message: JSONRPCMessage; options: TransportSendOptions | undefined }> = [];
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options?: TransportSendOptions) => {
    sent.push({ message, options });
    return send(message);
  };
  return sent;
}

const noNotifications = { notification: () => {} };

async function pair(server: Partial<PeerHandlers>, client: Partial<PeerHandlers> = {}) {
  const [clientEnd, serverEnd] = createInMemoryChannelPair();
  const clientSent = recordSends(clientEnd);
  const serverSent = recordSends(serverEnd);
  const a = new JsonRpcPeer({ request: () => ({}), ...noNotifications, ...client });
  const b = new JsonRpcPeer({ request: () => ({}), ...noNotifications, ...server });
  const errors: Error[] = [];
  a.onerror = (e) => void errors.push(e);
  await a.connect(clientEnd);
  await b.connect(serverEnd);
  return { a, b, clientEnd, serverEnd, clientSent, serverSent, errors };
}

describe('JsonRpcPeer', () => {
  it('answers each request by id, concurrent ones included, with ids of its own', async () => {
    const { a, clientSent } = await pair({ request: (request) => ({ echoed: request.params?.text, method: request.method }) });
    const answers = await Promise.all(['one', 'two', 'three'].map((text) => a.request('echo', { text })));
    expect(answers).toEqual([{ echoed: 'one', method: 'echo' }, { echoed: 'two', method: 'echo' }, { echoed: 'three', method: 'echo' }]);
    expect(clientSent.map((s) => (s.message as { id: number }).id)).toEqual([1, 2, 3]);
    expect(await a.request('ping', undefined)).toEqual({});
  });

  it('answers a throwing handler with its code, message and data; -32603 when it has no code', async () => {
    const { a } = await pair({
      request: (request) => {
        if (request.method === 'deny') throw new RpcError(-32010, 'Denied on purpose', { reason: 'denied-by-policy' });
        throw new Error('broken');
      },
    });
    const denied = await a.request('deny', {}).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(RpcError);
    expect(denied).toMatchObject({ code: -32010, message: 'Denied on purpose', data: { reason: 'denied-by-policy' } });
    expect(await a.request('other', {}).catch((e: unknown) => e)).toMatchObject({ code: -32603, message: 'broken', data: undefined });
  });

  it('times out a request it was not answered, cancelling it on the other side', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const served = deferred<RequestContext>();
    const { a, clientSent } = await pair({ request: (_request, context) => (served.resolve(context), new Promise(() => {})) });
    const answer = a.request('slow', {}, { timeoutMs: 1_000 }).catch((e: unknown) => e);
    const context = await served.promise;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await answer).toEqual(new RequestTimeoutError(1_000));
    expect(clientSent.at(-1)!.message).toMatchObject({ method: 'notifications/cancelled', params: { requestId: 1 } });
    await vi.waitFor(() => expect(context.signal.aborted).toBe(true));
  });

  it('restarts the timeout on progress when asked to, and hands the progress over without its token', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const served = deferred<{ token: unknown; context: RequestContext }>();
    const finish = deferred<Record<string, unknown>>();
    const { a } = await pair({ request: (request, context) => (served.resolve({ token: request.params?._meta?.progressToken, context }), finish.promise) });
    const progress: unknown[] = [];
    const answer = a.request('long', { _meta: { keep: 1 } }, { timeoutMs: 1_000, resetTimeoutOnProgress: true, onprogress: (p) => void progress.push(p) });
    const { token, context } = await served.promise;
    expect(token).toBe(1);
    await vi.advanceTimersByTimeAsync(800);
    await context.notify('notifications/progress', { progressToken: token, progress: 1, total: 2 });
    await vi.waitFor(() => expect(progress).toEqual([{ progress: 1, total: 2 }]));
    await vi.advanceTimersByTimeAsync(800);
    finish.resolve({ done: true });
    expect(await answer).toEqual({ done: true });
  });

  it('cancels a request whose signal aborts: the handler sees the reason and no answer comes back', async () => {
    const served = deferred<RequestContext>();
    const finish = deferred<Record<string, unknown>>();
    const { a, serverSent, errors } = await pair({ request: (_request, context) => (served.resolve(context), finish.promise) });
    const controller = new AbortController();
    const answer = a.request('slow', {}, { signal: controller.signal }).catch((e: unknown) => e);
    const context = await served.promise;
    controller.abort('the user gave up');
    expect(await answer).toEqual(new RequestCancelledError('the user gave up'));
    await vi.waitFor(() => expect(context.signal.aborted).toBe(true));
    // The served side's signal says the requester cancelled it, with its reason.
    expect(context.signal.reason).toEqual(new PeerCancellation('the user gave up'));
    expect(new RequestCancelledError(context.signal.reason)).toMatchObject({ message: 'the user gave up', byPeer: true });
    finish.resolve({ late: true });
    await context.notify('notifications/message', { dropped: true });
    await a.request('ping', undefined); // a round trip after the late answer would have arrived
    expect(serverSent.map((s) => s.message)).toEqual([{ jsonrpc: '2.0', id: 2, result: {} }]);
    expect(errors).toEqual([]);
  });

  it('sends requests and notifications of a handler as related to the request it serves', async () => {
    const { a, serverSent } = await pair(
      { request: async (_request, context) => {
        await context.notify('notifications/message', { level: 'info', data: 'working' });
        return { asked: await context.request('roots/list', undefined) };
      } },
      { request: (request) => ({ roots: [], method: request.method }) },
    );
    expect(await a.request('tools/call', { name: 'x' })).toEqual({ asked: { roots: [], method: 'roots/list' } });
    expect(serverSent.slice(0, 2).map((s) => s.options)).toEqual([{ relatedRequestId: 1 }, { relatedRequestId: 1 }]);
  });

  it('fails requests in flight with ConnectionClosedError after onclose, and aborts the ones it serves', async () => {
    const served = deferred<RequestContext>();
    const { a, b, serverEnd } = await pair({ request: (_request, context) => (served.resolve(context), new Promise(() => {})) }, { request: () => new Promise(() => {}) });
    const order: string[] = [];
    a.onclose = () => void order.push('onclose');
    const answer = a.request('slow', {}).catch((e: unknown) => (order.push('rejected'), e));
    const pending = b.request('also-slow', {}).catch((e: unknown) => e);
    await served.promise;
    await serverEnd.close();
    expect(await answer).toEqual(new ConnectionClosedError());
    expect(await pending).toEqual(new ConnectionClosedError());
    expect(order).toEqual(['onclose', 'rejected']);
    expect((await served.promise).signal.aborted).toBe(true);
    expect(a.connected).toBe(false);
    await expect(a.request('after', {})).rejects.toThrow('Not connected');
  });

  it('keeps the callbacks the transport had before connect and calls them first', async () => {
    const [end, other] = createInMemoryChannelPair();
    const seen: string[] = [];
    end.onclose = () => void seen.push('owner');
    const peer = new JsonRpcPeer({ request: () => ({}), ...noNotifications });
    peer.onclose = () => void seen.push('peer');
    await peer.connect(end);
    await other.start();
    await other.close();
    await vi.waitFor(() => expect(seen).toEqual(['owner', 'peer']));
  });

  it('hands other notifications to its handler and reports stray answers and progress', async () => {
    const heard: unknown[] = [];
    const { a, serverEnd, errors } = await pair({}, { notification: (n) => void heard.push(n) });
    await serverEnd.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await serverEnd.send({ jsonrpc: '2.0', id: 99, result: {} });
    await serverEnd.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 42, progress: 1 } });
    await a.request('ping', undefined);
    expect(heard).toEqual([{ method: 'notifications/tools/list_changed' }]);
    expect(errors.map((e) => e.message)).toEqual([
      'Received a response for an unknown message ID: 99',
      'Received a progress notification for an unknown token: 42',
    ]);
  });
});
