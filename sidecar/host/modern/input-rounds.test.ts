/**
 * Rounds of a bridged Multi Round-Trip Request, seen at the wire: the instance's transport is one
 * end of an in-memory channel pair, the other end a scripted legacy server that asks its client
 * mid-call and records what it is answered. (The real server-everything case, through the worker,
 * is test/modern/mrtr-legacy.test.ts.)
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createInMemoryChannelPair, type ChannelTransport } from '../../../shared/channel-transport.ts';
import { silentLogger } from '../../log.ts';
import { MAX_PARKED_CALLS, parkedCalls, type Attachment } from './bridged-call.ts';
import { serveRound, type RoundAnswer, type RoundRequest } from './input-rounds.ts';
import { LegacyInstance } from './legacy-instance.ts';
import { RequestStateCodec } from './request-state.ts';

type Message = Record<string, unknown> & { id?: unknown; method?: string; params?: Record<string, unknown>; result?: unknown; error?: unknown };

async function scriptedServer(): Promise<{ instance: LegacyInstance; server: ChannelTransport; next: (what: string) => Promise<Message> }> {
  const [hostEnd, server] = createInMemoryChannelPair();
  const got: Message[] = [];
  const waiters: (() => void)[] = [];
  server.onmessage = (raw) => {
    const message = raw as unknown as Message;
    if (message.method === 'initialize') {
      void server.send({ jsonrpc: '2.0', id: message.id as number, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } });
      return;
    }
    got.push(message);
    for (const wake of waiters.splice(0)) wake();
  };
  await server.start();
  const instance = await LegacyInstance.start({ server: 'scripted', transport: hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger });
  /** Takes the next recorded message whose method is `what` (`response` for an answer). */
  const next = async (what: string): Promise<Message> => {
    for (;;) {
      const index = got.findIndex((m) => (what === 'response' ? m.method === undefined : m.method === what));
      if (index >= 0) return got.splice(index, 1)[0]!;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { instance, server, next };
}

const KEY = { agent: 'alice', server: 'scripted', revision: 'uncontained' };
const CALL = { name: 'asks', arguments: { topic: 'x' } };
const ALL = { elicitation: {}, sampling: {}, roots: {} };
const attachment = (): Attachment & { seen: unknown[] } => {
  const seen: unknown[] = [];
  return { seen, logLevel: null, progressToken: undefined, notify: (n) => seen.push(n) };
};

async function setup(pendingMs?: number) {
  const scripted = await scriptedServer();
  const codec = await RequestStateCodec.create();
  const round = (params: Record<string, unknown>, extra: Partial<RoundRequest> = {}) =>
    serveRound({
      method: 'tools/call',
      params,
      clientCapabilities: ALL,
      instance: scripted.instance,
      key: KEY,
      attachment: attachment(),
      onAbandon: () => {},
      codec,
      ...(pendingMs !== undefined ? { pendingMs } : {}),
      ...extra,
    });
  const ask = (id: string, method: string, params: Record<string, unknown>) => scripted.server.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
  return { ...scripted, round, ask };
}

function irr(answer: RoundAnswer): { key: string; state: string; method: string } {
  expect(answer).toMatchObject({ result: { resultType: 'input_required', requestState: expect.any(String) } });
  const result = (answer as { result: { inputRequests: Record<string, { method: string }>; requestState: string } }).result;
  const [key, request] = Object.entries(result.inputRequests)[0]!;
  return { key, state: result.requestState, method: request.method };
}

describe('bridged MRTR rounds', () => {
  it('puts the questions a server asks at once into one InputRequiredResult, though they arrive in separate reads', async () => {
    const { round, ask, next } = await setup();
    const first = round({ ...CALL });
    await next('tools/call');
    await ask('e-1', 'elicitation/create', { message: 'Name?', requestedSchema: { type: 'object', properties: {} } });
    setImmediate(() => void ask('s-1', 'sampling/createMessage', { messages: [], maxTokens: 1 }));
    const answer = await first;
    const requests = (answer as { result: { inputRequests: Record<string, { method: string }> } }).result.inputRequests;
    expect(Object.values(requests).map((r) => r.method)).toEqual(['elicitation/create', 'sampling/createMessage']);
  });

  it('runs several rounds on one legacy call: each answer reaches the server verbatim, each state is new, and the last round gets the result', async () => {
    const { round, ask, next, server } = await setup();
    const first = round(CALL);
    const upstream = await next('tools/call');
    expect(upstream.params).toEqual(CALL);
    await ask('q1', 'elicitation/create', { message: 'name?', requestedSchema: { type: 'object', properties: {} } });
    const one = irr(await first);
    expect(one.method).toBe('elicitation/create');

    const elicited = { action: 'accept', content: { name: 'Ada' } };
    const second = round({ ...CALL, inputResponses: { [one.key]: elicited }, requestState: one.state });
    expect(await next('response')).toEqual({ jsonrpc: '2.0', id: 'q1', result: elicited });
    await ask('q2', 'sampling/createMessage', { messages: [], maxTokens: 5 });
    const two = irr(await second);
    expect(two.method).toBe('sampling/createMessage');
    expect(two.state).not.toBe(one.state);

    const sampled = { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm' };
    const third = round({ ...CALL, inputResponses: { [two.key]: sampled }, requestState: two.state });
    expect(await next('response')).toEqual({ jsonrpc: '2.0', id: 'q2', result: sampled });
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, result: { content: [{ type: 'text', text: 'done' }] } });
    expect(await third).toEqual({ result: expect.objectContaining({ resultType: 'complete', content: [{ type: 'text', text: 'done' }] }) });
  });

  it('refuses a state bound to another agent, server or trust revision, or to other params, and the call still takes the right retry', async () => {
    const { round, ask, next, server } = await setup();
    const first = round(CALL);
    const upstream = await next('tools/call');
    await ask('q', 'elicitation/create', { message: 'm', requestedSchema: { type: 'object', properties: {} } });
    const { key, state } = irr(await first);
    const retry = { ...CALL, inputResponses: { [key]: { action: 'decline' } }, requestState: state };
    for (const other of [{ ...KEY, agent: 'bob' }, { ...KEY, server: 'other' }, { ...KEY, revision: 'sha256:other' }]) {
      expect(await round(retry, { key: other })).toMatchObject({ error: { code: -32602, message: expect.stringContaining('not issued to this agent'), data: { requestState: 'invalid' } } });
    }
    expect(await round({ ...retry, arguments: { topic: 'y' } })).toMatchObject({ error: { code: -32602, message: expect.stringContaining('another request'), data: { requestState: 'invalid' } } });
    expect(await round(retry, { method: 'prompts/get' })).toMatchObject({ error: { data: { requestState: 'invalid' } } });
    expect(await round({ ...retry, requestState: 42 })).toMatchObject({ error: { code: -32602, data: { requestState: 'invalid' } } });
    const good = round(retry);
    expect(await next('response')).toMatchObject({ id: 'q', result: { action: 'decline' } });
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, result: { content: [] } });
    expect(await good).toMatchObject({ result: { resultType: 'complete' } });
  });

  it('cancels a parked call upstream when no retry comes in time, answering its question first; the state is then gone', async () => {
    const { round, ask, next } = await setup(50);
    const first = round(CALL);
    const upstream = await next('tools/call');
    await ask('q', 'elicitation/create', { message: 'm', requestedSchema: { type: 'object', properties: {} } });
    const { key, state } = irr(await first);
    expect(await next('response')).toMatchObject({ id: 'q', error: { code: -32603 } });
    expect((await next('notifications/cancelled')).params).toMatchObject({ requestId: upstream.id });
    expect(await round({ ...CALL, inputResponses: { [key]: { action: 'cancel' } }, requestState: state })).toMatchObject({
      error: { code: -32602, message: expect.stringContaining('is gone'), data: { reason: 'invalid-request', requestState: 'gone' } },
    });
  });

  it('says the pending call is gone when its server ended', async () => {
    const { round, ask, next, server } = await setup();
    const first = round(CALL);
    await next('tools/call');
    await ask('q', 'elicitation/create', { message: 'm', requestedSchema: { type: 'object', properties: {} } });
    const { key, state } = irr(await first);
    await server.close();
    expect(await round({ ...CALL, inputResponses: { [key]: { action: 'cancel' } }, requestState: state })).toMatchObject({ error: { data: { requestState: 'gone' } } });
  });

  it('fails a round whose request lacks the capability with -32021, answering the server with an error and cancelling the call', async () => {
    const { round, ask, next } = await setup();
    const first = round(CALL, { clientCapabilities: { elicitation: {} } });
    const upstream = await next('tools/call');
    await ask('q', 'sampling/createMessage', { messages: [], maxTokens: 5 });
    expect(await first).toEqual({
      error: { code: -32021, message: expect.stringContaining('sampling'), data: { requiredCapabilities: { sampling: {} }, reason: 'invalid-request' } },
    });
    expect(await next('response')).toMatchObject({ id: 'q', error: { code: -32603 } });
    expect((await next('notifications/cancelled')).params).toMatchObject({ requestId: upstream.id });
  });

  it('leaves out a question the request cannot answer beside one it can: the server hears "not declared", the agent is asked the rest', async () => {
    const { round, ask, next, server } = await setup();
    const first = round(CALL, { clientCapabilities: { sampling: {} } });
    const upstream = await next('tools/call');
    await ask('e', 'elicitation/create', { message: 'm', requestedSchema: { type: 'object', properties: {} } });
    await ask('s', 'sampling/createMessage', { messages: [], maxTokens: 5 });
    const answer = await first;
    const requests = (answer as { result: { inputRequests: Record<string, { method: string }> } }).result.inputRequests;
    expect(Object.values(requests).map((r) => r.method)).toEqual(['sampling/createMessage']);
    expect(await next('response')).toMatchObject({ id: 'e', error: { code: -32603, message: expect.stringContaining('elicitation') } });
    const { key, state } = irr(answer);
    const retry = round({ ...CALL, inputResponses: { [key]: { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'm' } }, requestState: state }, { clientCapabilities: { sampling: {} } });
    expect(await next('response')).toMatchObject({ id: 's', result: { model: 'm' } });
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, result: { content: [] } });
    expect(await retry).toMatchObject({ result: { resultType: 'complete' } });
  });

  it('answers roots/list with no roots itself for a request that declared none, and goes on', async () => {
    const { round, ask, next, server } = await setup();
    const first = round(CALL, { clientCapabilities: {} });
    const upstream = await next('tools/call');
    await ask('r', 'roots/list', {});
    expect(await next('response')).toEqual({ jsonrpc: '2.0', id: 'r', result: { roots: [] } });
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, result: { content: [] } });
    expect(await first).toMatchObject({ result: { resultType: 'complete' } });
  });

  it('cancels the call upstream when the round is abandoned before its step', async () => {
    const { round, next } = await setup();
    let abandon: (() => void) | undefined;
    const first = round(CALL, { onAbandon: (cancel) => (abandon = cancel) });
    const upstream = await next('tools/call');
    abandon!();
    expect((await next('notifications/cancelled')).params).toMatchObject({ requestId: upstream.id });
    await expect(first).rejects.toMatchObject({ message: expect.stringContaining('cancelled') });
  });

  it("answers a server's -32042 by the capability the request declared: -32021 without elicitation.url, -32603 for elicitations that are not URL ones, never -32042", async () => {
    const { round, next, server } = await setup();
    const urlRequired = (data: unknown) => ({ code: -32042, message: 'Open the link first', data });
    const formOnly = round(CALL, { clientCapabilities: { elicitation: {} } });
    const upstream = await next('tools/call');
    await server.send({ jsonrpc: '2.0', id: upstream.id as number, error: urlRequired({ elicitations: [{ mode: 'url', url: 'https://x.example/a', message: 'Sign in', elicitationId: 'e' }] }) });
    expect(await formOnly).toMatchObject({ error: { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } }, reason: 'invalid-request' } } });
    const odd = round(CALL);
    const second = await next('tools/call');
    await server.send({ jsonrpc: '2.0', id: second.id as number, error: urlRequired({ elicitations: [{ mode: 'form', message: 'x' }] }) });
    expect(await odd).toMatchObject({ error: { code: -32603, message: 'Open the link first', data: { serverCode: -32042 } } });
  });

  it("sends a -32042's call again only when the user did not decline or dismiss its URL: a refusal is answered by the host, the server never asked again", async () => {
    const { round, next, server } = await setup();
    const required = { code: -32042, message: 'Open the link first', data: { elicitations: [{ mode: 'url', url: 'https://x.example/a', message: 'Sign in' }] } };
    const urlCapable = { clientCapabilities: { elicitation: { url: {} } } };
    const first = round(CALL, urlCapable);
    await server.send({ jsonrpc: '2.0', id: (await next('tools/call')).id as number, error: required });
    const { key, state } = irr(await first);
    // Answered without the server: a resend would wait for its answer, which never comes.
    for (const action of ['decline', 'cancel'] as const) {
      expect(await round({ ...CALL, requestState: state, inputResponses: { [key]: { action } } }, urlCapable)).toEqual({
        error: { code: -32603, message: expect.stringContaining('URL elicitation required'), data: { serverCode: -32042, action, reason: 'invalid-request' } },
      });
    }
    // The user may still change their mind: the same state, accepted, sends the call again.
    const retry = round({ ...CALL, requestState: state, inputResponses: { [key]: { action: 'accept' } } }, urlCapable);
    const again = await next('tools/call');
    expect(again.params).toEqual(CALL);
    await server.send({ jsonrpc: '2.0', id: again.id as number, result: { content: [] } });
    expect(await retry).toMatchObject({ result: { resultType: 'complete' } });
  });

  it('parks nothing when the agent leaves while its InputRequiredResult is sealed: the cancelled call does not stay parked until its instance ends', async () => {
    const { round, next, ask, instance } = await setup();
    const codec = await RequestStateCodec.create();
    let abandon: (() => void) | undefined;
    // The agent's channel closes during the seal's await (an async HMAC).
    const leaving = { open: codec.open.bind(codec), seal: (...args: Parameters<RequestStateCodec['seal']>) => (abandon!(), codec.seal(...args)) } as unknown as RequestStateCodec;
    const first = round(CALL, { codec: leaving, onAbandon: (cancel) => (abandon = cancel) });
    const upstream = await next('tools/call');
    await ask('q', 'elicitation/create', { message: 'Topic?', requestedSchema: { type: 'object', properties: {} } });
    await first;
    expect((await next('notifications/cancelled')).params).toMatchObject({ requestId: upstream.id });
    expect(parkedCalls(instance).size).toBe(0);
  });

  it(`keeps at most ${MAX_PARKED_CALLS} calls parked on an instance: one more cancels the oldest upstream, whose retry then hears it is gone`, async () => {
    const { round, ask, next, instance, server } = await setup();
    const parked: Array<{ upstream: Message; key: string; state: string }> = [];
    for (let i = 0; i <= MAX_PARKED_CALLS; i++) {
      const first = round(CALL);
      const upstream = await next('tools/call');
      await ask(`q${i}`, 'elicitation/create', { message: 'm', requestedSchema: { type: 'object', properties: {} } });
      parked.push({ upstream, ...irr(await first) });
    }
    expect(parkedCalls(instance).size).toBe(MAX_PARKED_CALLS);
    expect(instance.inFlight).toBe(MAX_PARKED_CALLS);
    const oldest = parked[0]!;
    expect(await next('response')).toMatchObject({ id: 'q0', error: { code: -32603 } });
    expect((await next('notifications/cancelled')).params).toMatchObject({ requestId: oldest.upstream.id, reason: expect.stringContaining(`More than ${MAX_PARKED_CALLS} calls`) });
    expect(await round({ ...CALL, inputResponses: { [oldest.key]: { action: 'cancel' } }, requestState: oldest.state })).toMatchObject({
      error: { code: -32602, data: { reason: 'invalid-request', requestState: 'gone' } },
    });
    // The second oldest is still there, and takes its retry.
    const second = parked[1]!;
    const retried = round({ ...CALL, inputResponses: { [second.key]: { action: 'accept', content: {} } }, requestState: second.state });
    expect(await next('response')).toMatchObject({ id: 'q1', result: { action: 'accept' } });
    await server.send({ jsonrpc: '2.0', id: second.upstream.id as number, result: { content: [] } });
    expect(await retried).toMatchObject({ result: { resultType: 'complete' } });
    expect(instance.inFlight).toBe(MAX_PARKED_CALLS - 1);
  });
});
