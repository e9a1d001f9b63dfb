/**
 * What the instance writes upstream and routes back, seen at the wire: the instance's transport is
 * one end of an in-memory channel pair, the other end is a scripted legacy server that records
 * every message it gets. (The real server-everything cases are in legacy-instance.test.ts.)
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createInMemoryChannelPair, type ChannelTransport } from '../../../shared/channel-transport.ts';
import { WireError } from '../../../shared/errors.ts';
import { silentLogger } from '../../log.ts';
import { LegacyInstance, type CallSink, type ServerRequest } from './legacy-instance.ts';

type Message = Record<string, unknown> & { id?: unknown; method?: string; params?: Record<string, unknown> };

/** A legacy server end that answers initialize and records the rest; `next` takes recorded messages in order. */
async function scriptedServer(): Promise<{ instance: LegacyInstance; server: ChannelTransport; got: Message[]; initialize: Message; next: (what: string) => Promise<Message> }> {
  const [hostEnd, server] = createInMemoryChannelPair();
  const got: Message[] = [];
  const taken = new Set<Message>();
  const waiters: (() => void)[] = [];
  let initialize!: Message;
  server.onmessage = (raw) => {
    const message = raw as unknown as Message;
    if (message.method === 'initialize') {
      initialize = message;
      void server.send({ jsonrpc: '2.0', id: message.id as number, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } });
      return;
    }
    got.push(message);
    for (const wake of waiters.splice(0)) wake();
  };
  await server.start();
  const instance = await LegacyInstance.start({ server: 'scripted', transport: hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger });
  /** The next message not taken yet whose method is `what` (`response` for an answer). */
  const next = async (what: string): Promise<Message> => {
    for (;;) {
      const found = got.find((m) => !taken.has(m) && (what === 'response' ? m.method === undefined : m.method === what));
      if (found !== undefined) {
        taken.add(found);
        return found;
      }
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { instance, server, got, initialize, next };
}

function sink(logLevel: CallSink['logLevel'] = null): CallSink & { seen: unknown[] } {
  const seen: unknown[] = [];
  return { seen, logLevel, notify: (n) => seen.push(n) };
}

describe('LegacyInstance routing', () => {
  it('initializes on the agent\'s behalf declaring what a modern agent may answer, then says initialized', async () => {
    const { instance, got, initialize } = await scriptedServer();
    expect(initialize.params).toMatchObject({ protocolVersion: '2025-11-25', capabilities: { elicitation: {}, sampling: {}, roots: {} }, clientInfo: { name: 'agent', version: '1' } });
    expect(instance.serverInfo).toEqual({ name: 'scripted', version: '1' });
    expect(got.map((m) => m.method)).toEqual(['notifications/initialized']);
  });

  it('gives each call its own upstream id and its own progress token, restored on the way back', async () => {
    const { instance, server, next } = await scriptedServer();
    const a = sink();
    const b = sink();
    const firstSent = next('tools/call');
    const first = instance.call({ method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } }, a);
    const upstreamA = await firstSent;
    const secondSent = next('tools/call');
    const second = instance.call({ method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } }, b);
    const upstreamB = await secondSent;
    expect(upstreamA.id).not.toBe(upstreamB.id);
    const tokenB = (upstreamB.params!._meta as { progressToken: unknown }).progressToken;
    expect(tokenB).not.toBe((upstreamA.params!._meta as { progressToken: unknown }).progressToken);
    await server.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: tokenB as string, progress: 1 } } as JSONRPCMessage);
    await server.send({ jsonrpc: '2.0', id: upstreamB.id as number, result: { content: [{ type: 'text', text: 'b' }] } });
    await server.send({ jsonrpc: '2.0', id: upstreamA.id as number, result: { content: [{ type: 'text', text: 'a' }] } });
    expect(await second.outcome).toEqual({ result: { content: [{ type: 'text', text: 'b' }] } });
    expect(await first.outcome).toEqual({ result: { content: [{ type: 'text', text: 'a' }] } });
    expect(b.seen).toEqual([{ method: 'notifications/progress', params: { progressToken: 1, progress: 1 } }]);
    expect(a.seen).toEqual([]);
  });

  it('relays a log line only while exactly one call is in flight, and only at or above its logLevel', async () => {
    const { instance, server, next } = await scriptedServer();
    const log = (level: string) => server.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level, data: level } } as JSONRPCMessage);
    const only = sink('warning');
    const sent = next('tools/call');
    const call = instance.call({ method: 'tools/call', params: { name: 'x' } }, only);
    const upstream = await sent;
    await log('info');
    await log('error');
    const otherSent = next('tools/call');
    const other = instance.call({ method: 'tools/call', params: { name: 'y' } }, sink('debug'));
    const otherUpstream = await otherSent;
    await log('critical'); // two in flight: belongs to neither
    await server.send({ jsonrpc: '2.0', id: otherUpstream.id as number, result: {} });
    await other.outcome;
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, result: {} });
    await call.outcome;
    expect(only.seen).toEqual([{ method: 'notifications/message', params: { level: 'error', data: 'error' } }]);
  });

  it('cancels with notifications/cancelled for the upstream id, and a late answer goes nowhere', async () => {
    const { instance, server, next } = await scriptedServer();
    const sent = next('tools/call');
    const call = instance.call({ method: 'tools/call', params: { name: 'slow' } }, sink());
    const upstream = await sent;
    const cancelled = next('notifications/cancelled');
    call.cancel('The agent closed its request');
    expect((await cancelled).params).toEqual({ requestId: upstream.id, reason: 'The agent closed its request' });
    expect(instance.inFlight).toBe(0);
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, result: {} });
    expect(instance.ended).toBe(false);
  });

  it('hands a server→client request to the one input-capable call in flight, legacy-only params stripped, and answers the server with what it is given', async () => {
    const { instance, server, next } = await scriptedServer();
    const asked: ServerRequest[] = [];
    let heard!: () => void;
    const question = new Promise<void>((resolve) => (heard = resolve));
    instance.call({ method: 'tools/call', params: { name: 'asks' } }, { ...sink(), input: (request) => (asked.push(request), heard()) });
    instance.call({ method: 'tools/list' }, sink()); // cannot ask, so it does not make attribution ambiguous
    await next('tools/call');
    await server.send({ jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: { mode: 'url', message: 'm', url: 'https://x', elicitationId: 'e', task: {} } });
    await question;
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ method: 'elicitation/create', params: { mode: 'url', message: 'm', url: 'https://x' } });
    expect(asked[0]!.params).not.toHaveProperty('elicitationId');
    expect(asked[0]!.params).not.toHaveProperty('task');
    asked[0]!.answer({ result: { action: 'decline' } });
    asked[0]!.answer({ result: { action: 'accept' } });
    expect(await next('response')).toEqual({ jsonrpc: '2.0', id: 'srv-1', result: { action: 'decline' } });
    expect(instance.inFlight).toBe(2);
  });

  it('refuses a server→client request it cannot attribute: two input-capable calls in flight, or none; roots/list with none gets an empty list', async () => {
    const { instance, server, next } = await scriptedServer();
    await server.send({ jsonrpc: '2.0', id: 'r-0', method: 'roots/list' });
    expect(await next('response')).toEqual({ jsonrpc: '2.0', id: 'r-0', result: { roots: [] } });
    await server.send({ jsonrpc: '2.0', id: 's-0', method: 'sampling/createMessage', params: {} });
    expect(await next('response')).toMatchObject({ id: 's-0', error: { code: -32603 } });
    const asked: unknown[] = [];
    const input = { ...sink(), input: (request: unknown) => asked.push(request) };
    instance.call({ method: 'tools/call', params: { name: 'a' } }, input);
    instance.call({ method: 'prompts/get', params: { name: 'b' } }, input);
    await server.send({ jsonrpc: '2.0', id: 's-1', method: 'sampling/createMessage', params: {} });
    expect(await next('response')).toMatchObject({ id: 's-1', error: { code: -32603, message: expect.stringContaining('cannot tell which one asks') } });
    await server.send({ jsonrpc: '2.0', id: 'x-1', method: 'something/else' });
    expect(await next('response')).toMatchObject({ id: 'x-1', error: { code: -32601 } });
    expect(asked).toEqual([]);
  });

  it('gives a question to the one attached call when the others asking are parked, and refuses it when every one is parked', async () => {
    const { instance, server, next } = await scriptedServer();
    const heard: string[] = [];
    const asking = (name: string, parked: { value: boolean }): CallSink => ({
      ...sink(),
      input: (request) => {
        heard.push(name);
        request.answer({ result: { action: 'decline' } });
      },
      get parked() {
        return parked.value;
      },
    });
    const first = { value: true };
    const second = { value: false };
    instance.call({ method: 'tools/call', params: { name: 'parked' } }, asking('parked', first));
    instance.call({ method: 'tools/call', params: { name: 'attached' } }, asking('attached', second));
    await server.send({ jsonrpc: '2.0', id: 'e-1', method: 'elicitation/create', params: { message: 'm', requestedSchema: { type: 'object', properties: {} } } });
    expect(await next('response')).toEqual({ jsonrpc: '2.0', id: 'e-1', result: { action: 'decline' } });
    expect(heard).toEqual(['attached']);
    second.value = true;
    await server.send({ jsonrpc: '2.0', id: 'r-1', method: 'roots/list' });
    expect(await next('response')).toMatchObject({ id: 'r-1', error: { code: -32603, message: expect.stringContaining('cannot tell which one asks') } });
    expect(heard).toEqual(['attached']);
  });

  it('fails every call in flight with server-exited when the server goes away', async () => {
    const { instance, server } = await scriptedServer();
    const one = instance.call({ method: 'tools/call', params: { name: 'a' } }, sink());
    const two = instance.call({ method: 'tools/list' }, sink());
    await server.close();
    for (const call of [one, two]) {
      const error = await call.outcome.then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).reason).toBe('server-exited');
    }
    expect(instance.ended).toBe(true);
    await expect(instance.call({ method: 'tools/list' }, sink()).outcome).rejects.toMatchObject({ reason: 'server-exited' });
  });
});
