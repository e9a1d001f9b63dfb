/**
 * The bounds of a legacy session endpoint (review dos.md, findings 1, 3 and 5; isolation.md,
 * finding 3): requests in flight per session and per agent, answers held until the agent has read
 * them and its budget of unread bytes, SSE streams an agent stops reading, and what the event
 * store keeps of streams that ended.
 */
import { describe, expect, it, vi } from 'vitest';
import { advanceBy, useFakeClock } from '../../test/support/fake-clock.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SessionEventStore } from '../passthrough/session-event-store.ts';
import { LegacyHttpEndpoint, type LegacyHttpEndpointOptions } from './legacy-http-endpoint.ts';
import { AgentRequests, drawRequestsFrom, MAX_REQUESTS_PER_SESSION } from './request-limits.ts';
import { HELD_ANSWER_MIN_CHARS } from './answer-stream.ts';
import { eventsOf, type SseEvent } from '../../test/support/sse-events.ts';

const URL_ = 'http://127.0.0.1/servers/alpha/mcp';
const ID = 'session-1';
const BASE_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const SESSION = { ...BASE_HEADERS, 'mcp-session-id': ID, 'mcp-protocol-version': '2025-11-25' };
const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
const result = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: {} });
const progress = (n: number, pad = ''): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: n, message: pad } });
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const cancel = (id: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'stopped' } });

function call(endpoint: LegacyHttpEndpoint, body: unknown, agent?: AgentRequests): Promise<Response> {
  const request = new Request(URL_, { method: 'POST', headers: SESSION, body: JSON.stringify(body) });
  if (agent !== undefined) drawRequestsFrom(request, agent);
  return endpoint.handleRequest(request, { kind: 'json', value: body });
}

function get(endpoint: LegacyHttpEndpoint, lastEventId?: string): Promise<Response> {
  return endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: lastEventId === undefined ? SESSION : { ...SESSION, 'last-event-id': lastEventId } }));
}

async function opened(options: Partial<LegacyHttpEndpointOptions> = {}, agent?: AgentRequests) {
  const endpoint = new LegacyHttpEndpoint({ sessionId: ID, ...options });
  const received: JSONRPCMessage[] = [];
  endpoint.onmessage = (message) => void received.push(message);
  const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
  const request = new Request(URL_, { method: 'POST', headers: BASE_HEADERS, body: JSON.stringify(initialize) });
  if (agent !== undefined) drawRequestsFrom(request, agent);
  const init = await endpoint.handleRequest(request);
  await endpoint.send(result(0));
  await init.text();
  received.length = 0;
  return { endpoint, received };
}

const decoder = new TextDecoder();
/** Reads one chunk (one event: the endpoint writes each in one chunk) off a raw body reader. */
async function nextEvent(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<SseEvent> {
  const { value } = await reader.read();
  return eventsOf(decoder.decode(value))[0]!;
}

const limitError = (id: number, data: Record<string, unknown>) => ({ jsonrpc: '2.0', id, error: { code: -32012, message: expect.any(String), data: { reason: 'limit-reached', ...data } } });

describe('requests in flight', () => {
  it(`refuses a session's request past ${MAX_REQUESTS_PER_SESSION} in flight with limit-reached, per message inside a batch, and takes more once some are answered`, async () => {
    const { endpoint, received } = await opened();
    const N = MAX_REQUESTS_PER_SESSION;
    // Filled in batches of at most 100, the most one batch may hold.
    const batches: Response[] = [];
    for (let from = 1; from <= N; from += 100) {
      const full = await call(endpoint, Array.from({ length: Math.min(100, N - from + 1) }, (_, i) => ping(from + i)));
      expect(full.status).toBe(200);
      batches.push(full);
    }
    expect(received).toHaveLength(N);

    const refusedTold: Array<[unknown, string]> = [];
    endpoint.onrefused = (request, error) => void refusedTold.push([request.id, error.reason]);
    const lone = await call(endpoint, ping(N + 1));
    expect(lone.status).toBe(429);
    // Told, as a reused id is, so the session can put the refusal on the record.
    expect(refusedTold).toEqual([[N + 1, 'limit-reached']]);
    const body = (await lone.json()) as { error: { message: string } };
    expect(body).toEqual(limitError(N + 1, { limit: N }));
    expect(body.error.message).toBe(`This session already has ${N} requests in flight: wait for their answers before sending more, or open another session`);
    // Wholly refused, but what frees a slot (answers, notifications) still goes on.
    const none = await call(endpoint, [ping(N + 2), initialized]);
    expect(none.status).toBe(429);
    expect(await none.json()).toEqual([limitError(N + 2, { limit: N })]);
    expect(received.slice(N)).toEqual([initialized]);

    await endpoint.send(result(1));
    // Its place comes back once the agent has read the answer, not when it was sent.
    expect((await call(endpoint, ping(N + 3))).status).toBe(429);
    expect(JSON.parse(eventsOf(decoder.decode((await batches[0]!.body!.getReader().read()).value)).at(-1)!.data)).toEqual(result(1));
    const partly = await call(endpoint, [ping(N + 3), ping(N + 4)]);
    expect(partly.status).toBe(200);
    expect(received.at(-1)).toEqual(ping(N + 3));
    await endpoint.send(result(N + 3));
    const events = eventsOf(await partly.text()).filter((e) => e.data !== '').map((e) => JSON.parse(e.data) as unknown);
    expect(events).toEqual([limitError(N + 4, { limit: N }), result(N + 3)]);
    await endpoint.close();
  });

  it("counts an agent's requests across its sessions, refuses past its cap, and gives them back when a session closes", async () => {
    const alice = new AgentRequests('alice', 3);
    const one = await opened({}, alice);
    const two = await opened({}, alice);
    expect(alice.inFlight).toBe(0);
    void call(one.endpoint, [ping(1), ping(2)], alice);
    void call(two.endpoint, ping(1), alice);
    expect(alice.inFlight).toBe(3);
    const refused = await call(two.endpoint, ping(2), alice);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { message: string } };
    expect(body).toEqual(limitError(2, { agent: 'alice', limit: 3 }));
    expect(body.error.message).toBe('Agent "alice" already has 3 requests in flight: wait for their answers before sending more, or raise max-requests-per-agent in the worker config');
    expect(two.received).toEqual([ping(1)]);

    await one.endpoint.close();
    expect(alice.inFlight).toBe(1);
    const taken = call(two.endpoint, ping(3), alice);
    expect(two.received.at(-1)).toEqual(ping(3));
    await two.endpoint.send(result(3));
    expect((await taken).status).toBe(200);
    expect(alice.inFlight).toBe(1);
    await two.endpoint.close();
    expect(alice.inFlight).toBe(0);
  });

  it("keeps a cancelled request's place until its late answer comes, ends the stream it alone kept open, and drops that answer", async () => {
    const alice = new AgentRequests('alice', 3);
    const { endpoint, received } = await opened({}, alice);
    const lone = call(endpoint, ping(1), alice);
    const batch = await call(endpoint, [ping(2), ping(3)], alice);
    expect(alice.inFlight).toBe(3);
    // A server that honours a cancellation never answers the request (MCP: "not send a response").
    expect((await call(endpoint, [cancel(1), cancel(2), cancel(99)], alice)).status).toBe(202);
    expect(received.slice(-3)).toEqual([cancel(1), cancel(2), cancel(99)]);
    // One that does not is still at work on them: their places stay taken.
    expect(alice.inFlight).toBe(3);
    expect((await call(endpoint, ping(4), alice)).status).toBe(429);
    // The lone POST, still waiting for its answer, ends with none; the batch's stream waits for 3 alone.
    expect(eventsOf(await (await lone).text())).toEqual([]);
    await endpoint.send(result(1)); // the late answer: dropped, and its place comes back
    expect(alice.inFlight).toBe(2);
    await endpoint.send(result(2));
    expect(alice.inFlight).toBe(1);
    await endpoint.send(result(3));
    expect(eventsOf(await batch.text())).toEqual([{ data: JSON.stringify(result(3)) }]);
    expect(alice.inFlight).toBe(0);
    await endpoint.close();
  });

  it("gives a cancelled request's place back when its grace ends with no answer, or when its session closes, once", async () => {
    useFakeClock();
    try {
      const alice = new AgentRequests('alice', 3, { cancelGraceMs: 1_000 });
      const { endpoint } = await opened({}, alice);
      for (let id = 10; id < 13; id++) void call(endpoint, ping(id), alice);
      await call(endpoint, [cancel(10), cancel(11), cancel(12)], alice);
      expect((await call(endpoint, ping(13), alice)).status).toBe(429);
      await advanceBy(900);
      expect(alice.inFlight).toBe(3);
      await advanceBy(100);
      expect(alice.inFlight).toBe(0);
      const after = call(endpoint, ping(13), alice);
      // Past its grace, a late answer is still dropped, and gives nothing back twice: 13 still holds its place.
      await endpoint.send(result(10));
      expect(alice.inFlight).toBe(1);
      await endpoint.send(result(13));
      expect(await (await after).json()).toEqual(result(13));
      expect(alice.inFlight).toBe(0);

      // Another session's request holds a place throughout: a grace run after the close would show below it.
      const { endpoint: other } = await opened({}, alice);
      void call(other, ping(20), alice);
      void call(endpoint, ping(14), alice);
      await call(endpoint, cancel(14), alice);
      expect(alice.inFlight).toBe(2);
      await endpoint.close();
      expect(alice.inFlight).toBe(1);
      await advanceBy(1_000);
      expect(alice.inFlight).toBe(1);
      await other.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('ends a request cancelled in its own batch, its place kept as for any cancelled request, and never a cancelled initialize', async () => {
    const alice = new AgentRequests('alice', 3);
    const { endpoint } = await opened({}, alice);
    const both = await call(endpoint, [ping(20), cancel(20)], alice);
    expect(alice.inFlight).toBe(1);
    expect(eventsOf(await both.text())).toEqual([]);
    await endpoint.close();
    expect(alice.inFlight).toBe(0);

    // MCP forbids cancelling initialize: the session goes on being made, and gets its answer.
    const fresh = new LegacyHttpEndpoint({ sessionId: ID });
    const init = fresh.handleRequest(new Request(URL_, { method: 'POST', headers: BASE_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) }));
    await fresh.handleRequest(new Request(URL_, { method: 'POST', headers: SESSION, body: JSON.stringify(cancel(0)) }));
    await fresh.send(result(0));
    expect(eventsOf(await (await init).text()).map((e) => e.data)).toEqual([JSON.stringify(result(0))]);
    await fresh.close();
  });

  it("cancels a later request that reuses the initialize's id once the initialize was answered (review s19)", async () => {
    const alice = new AgentRequests('alice', 3);
    const { endpoint } = await opened({}, alice);
    const reused = await call(endpoint, [ping(0)], alice);
    expect(alice.inFlight).toBe(1);
    await call(endpoint, cancel(0), alice);
    // Its stream ends at once, as for any cancelled request; its place waits out the grace.
    expect(eventsOf(await reused.text())).toEqual([]);
    await endpoint.close();
    expect(alice.inFlight).toBe(0);
  });
});

describe('cancelling the last request of a batch the agent dropped', () => {
  it("keeps the batch's other answers for its resume (review s19)", async () => {
    const { endpoint } = await opened({ eventStore: new SessionEventStore(), keepAliveMs: 0 });
    const batch = await call(endpoint, [ping(1), ping(2)]);
    const reader = batch.body!.getReader();
    const priming = await nextEvent(reader);
    await reader.cancel();
    await endpoint.send(result(1));
    await call(endpoint, cancel(2));
    const resumed = await get(endpoint, priming.id);
    expect(resumed.status).toBe(200);
    expect(eventsOf(await resumed.text()).map((e) => JSON.parse(e.data) as unknown)).toEqual([result(1)]);
  });
});

describe('answers the agent has not read', () => {
  const big = (id: number, bytes: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'x'.repeat(bytes) }] } });

  it('keep a lone request\'s place until its large JSON answer is read or dropped, even after the session closed; a small one gives it back at once', async () => {
    const alice = new AgentRequests('alice', 2);
    const { endpoint } = await opened({}, alice);
    const first = call(endpoint, ping(1), alice);
    await endpoint.send(big(1, HELD_ANSWER_MIN_CHARS));
    const second = call(endpoint, ping(2), alice);
    await endpoint.send(big(2, 200_000));
    expect([(await first).headers.get('content-type'), (await second).headers.get('content-type')]).toEqual(['application/json', 'application/json']);
    // Neither body has been read: the worker holds both, and both places.
    expect(alice.inFlight).toBe(2);
    expect(alice.unreadBytes).toBeGreaterThan(2 * HELD_ANSWER_MIN_CHARS);
    const refused = await call(endpoint, ping(3), alice);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual(limitError(3, { agent: 'alice', limit: 2 }));

    expect(await (await first).json()).toEqual(big(1, HELD_ANSWER_MIN_CHARS));
    expect(alice.inFlight).toBe(1);
    // Closing the session leaves the unread answer in memory, so its place stays taken until the agent goes away.
    await endpoint.close();
    expect(alice.inFlight).toBe(1);
    await (await second).body!.cancel();
    expect([alice.inFlight, alice.unreadBytes]).toEqual([0, 0]);

    // A small answer is a plain body: its place comes back when it is sent.
    const other = await opened({}, alice);
    const small = call(other.endpoint, ping(4), alice);
    await other.endpoint.send(result(4));
    expect(alice.inFlight).toBe(0);
    expect(await (await small).json()).toEqual(result(4));
    await other.endpoint.close();
  });

  it("keep the places of a stream's answered requests until the agent has read up to them", async () => {
    const alice = new AgentRequests('alice', 3);
    const { endpoint } = await opened({}, alice);
    const batch = await call(endpoint, [ping(1), ping(2)], alice);
    await endpoint.send(big(1, 100_000));
    expect(alice.inFlight).toBe(2);
    await endpoint.send(result(2));
    expect(alice.inFlight).toBe(2);
    const events = eventsOf(await batch.text()).map((e) => JSON.parse(e.data) as unknown);
    expect(events).toEqual([big(1, 100_000), result(2)]);
    expect([alice.inFlight, alice.unreadBytes]).toEqual([0, 0]);
    await endpoint.close();
  });

  it("keep the answers of an agent past its unread budget and refuse its new requests; past the hard bound, a large answer is replaced by limit-reached and a stream it is not reading is ended", async () => {
    // Budget 100 KB, hard bound 4 × that.
    const alice = new AgentRequests('alice', 100, { maxUnreadBytes: 100_000 });
    const { endpoint } = await opened({ maxQueuedBytes: 1 << 30 }, alice);
    const lines: Array<Record<string, unknown>> = [];
    const log = { info: (msg: string, fields: Record<string, unknown>) => lines.push({ msg, ...fields }) };
    const logged = await opened({ log: log as never, maxQueuedBytes: 1 << 30 }, alice);
    // Five requests taken while alice holds nothing unread, and a stream.
    const pending = [1, 2, 3, 4].map((id) => call(endpoint, ping(id), alice));
    const late = call(logged.endpoint, ping(5), alice);
    const stream = await call(logged.endpoint, [ping(6)], alice);
    const held: Response[] = [];
    for (let id = 1; id <= 4; id++) {
      await endpoint.send(big(id, 100_000));
      held.push(await pending[id - 1]!);
    }
    // Four answers of 100 KB and their envelopes: every one kept, although the second already found her past her budget.
    expect(alice.unreadBytes).toBeGreaterThan(400_000);
    expect(alice.unreadBytes).toBeLessThan(401_000);
    expect(lines).toEqual([]);

    // Past her budget, a new request is refused, whole POST 429, and goes nowhere.
    const refused = await call(logged.endpoint, ping(7), alice);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual(limitError(7, { agent: 'alice', limit: 100_000 }));

    // Past the hard bound, an answer already on its way is dropped, and a stream she is not reading ended.
    await logged.endpoint.send(big(5, 100_000));
    expect(await (await late).json()).toEqual({ jsonrpc: '2.0', id: 5, error: { code: -32012, message: 'Answer dropped: agent "alice" holds more than 400000 bytes of answers it has not read; read them before sending more requests', data: { reason: 'limit-reached', agent: 'alice', limit: 400_000 } } });
    expect(lines.map((l) => l.msg)).toEqual(['Answer dropped: the agent left too much unread']);
    await logged.endpoint.send(progress(1, 'p'.repeat(1_000)), { relatedRequestId: 6 });
    await expect(stream.body!.getReader().read()).rejects.toThrow('SSE stream ended: agent "alice" holds more than 400000 bytes of answers unread');
    expect(lines.at(-1)).toMatchObject({ msg: 'SSE stream ended: the agent left it unread', agent: 'alice' });

    // Reading what she holds brings her back under: her requests are taken again.
    for (let id = 1; id <= 4; id++) expect(await held[id - 1]!.json()).toEqual(big(id, 100_000));
    expect(alice.unreadBytes).toBe(0);
    const again = call(logged.endpoint, ping(8), alice);
    await logged.endpoint.send(big(8, 100_000));
    expect(await (await again).json()).toEqual(big(8, 100_000));
    await endpoint.close();
    await logged.endpoint.close();
  });
});

describe('SSE backpressure', () => {
  it('ends a stream its agent stopped reading once it holds more than the bound, and the agent resumes what it missed', async () => {
    const { endpoint } = await opened({ eventStore: new SessionEventStore(), maxQueuedBytes: 64 * 1024 });
    const stalled = await call(endpoint, [ping(1)]);
    const reader = stalled.body!.getReader();
    const priming = await nextEvent(reader);
    expect(priming).toEqual({ id: expect.any(String), data: '' });
    // 200 KB for a reader that reads nothing more.
    const notes = Array.from({ length: 20 }, (_, n) => progress(n, 'p'.repeat(10_000)));
    for (const note of notes) await endpoint.send(note, { relatedRequestId: 1 });
    await expect(reader.read()).rejects.toThrow('the agent left more than 65536 bytes unread');
    await endpoint.send(result(1));

    const resumed = await get(endpoint, priming.id);
    expect(resumed.status).toBe(200);
    const replayed = eventsOf(await resumed.text()).map((e) => JSON.parse(e.data) as unknown);
    expect(replayed).toEqual([...notes, result(1)]);
  });

  it('counts only what waits behind the event being read: a batch whose first answer is large reaches a slow reader whole', async () => {
    // Review isolation-review.md, finding 2: the rest of a large answer the runtime takes in
    // pieces counted against the bound, so the batch's second answer cut the stream and lost the first.
    const { endpoint } = await opened({ eventStore: new SessionEventStore(), maxQueuedBytes: 64 * 1024 });
    const batch = await call(endpoint, [ping(1), ping(2)]);
    const reader = batch.body!.getReader();
    await nextEvent(reader); // the priming event
    const large: JSONRPCMessage = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'y'.repeat(1_000_000) }] } };
    await endpoint.send(large);
    let text = decoder.decode((await reader.read()).value); // the runtime has taken one piece: the link is slow
    await endpoint.send(result(2));
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);
    expect(eventsOf(text).map((e) => JSON.parse(e.data) as unknown)).toEqual([large, result(2)]);
  });

  it('refuses a resume from an agent past its unread budget: replays of an ended stream it never reads stop at the budget', async () => {
    // Review s19: a stream whose requests were all answered is ended at each resume, so every GET
    // with its Last-Event-ID queued another whole copy of its stored events, unbounded.
    const agent = new AgentRequests('mallory', 100, { maxUnreadBytes: 1_000_000 });
    const { endpoint } = await opened({ eventStore: new SessionEventStore(), keepAliveMs: 0 }, agent);
    const batch = await call(endpoint, [ping(1), ping(2)], agent);
    const reader = batch.body!.getReader();
    const priming = await nextEvent(reader);
    await reader.cancel();
    const large = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'z'.repeat(150_000) }] } });
    await endpoint.send(large(1));
    await endpoint.send(large(2));
    expect(agent.unreadBytes).toBe(0);

    const held: Response[] = [];
    let refused: Response | undefined;
    for (let n = 0; n < 50 && refused === undefined; n++) {
      const resumed = await get(endpoint, priming.id);
      if (resumed.status === 200) held.push(resumed);
      else refused = resumed;
    }
    // Each replay is ~300 KB: the fourth takes the agent past 1 MB, and the fifth GET is refused.
    expect(held).toHaveLength(4);
    expect(refused?.status).toBe(429);
    expect(await refused!.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32012, message: expect.stringContaining('has not read'), data: { reason: 'limit-reached', agent: 'mallory', limit: 1_000_000 } } });
    expect(agent.unreadBytes).toBeLessThan(1_000_000 + 310_000);

    // Reading one replay gives the agent room again: it gets the whole of what it missed.
    expect(eventsOf(await held[0]!.text()).map((e) => JSON.parse(e.data) as unknown)).toEqual([large(1), large(2)]);
    const again = await get(endpoint, priming.id);
    expect(again.status).toBe(200);
    for (const response of [...held.slice(1), again]) await response.body!.cancel();
    expect(agent.unreadBytes).toBe(0);
  });

  it('bounds the standalone stream too, which a later GET may open again', async () => {
    const { endpoint } = await opened({ maxQueuedBytes: 16 * 1024 });
    const standalone = await get(endpoint);
    for (let n = 0; n < 10; n++) await endpoint.send(progress(n, 'q'.repeat(4_000)));
    await expect(standalone.body!.getReader().read()).rejects.toThrow('unread');
    const again = await get(endpoint);
    expect(again.status).toBe(200);
    await endpoint.close();
  });
});

describe('event store retention', () => {
  it("forgets a stream's events once it ended with every event taken, and keeps those of one that ended unread", async () => {
    const store = new SessionEventStore();
    const { endpoint } = await opened({ eventStore: store });
    // The initialize answer was read only after the stream ended, so it is still kept.
    const before = store.size;

    const read = await call(endpoint, [ping(1)]);
    const reader = read.body!.getReader();
    const priming = await nextEvent(reader);
    const pending = nextEvent(reader);
    await endpoint.send(progress(1), { relatedRequestId: 1 });
    expect(JSON.parse((await pending).data)).toEqual(progress(1));
    const last = reader.read();
    await endpoint.send(result(1));
    expect(JSON.parse(eventsOf(decoder.decode((await last).value))[0]!.data)).toEqual(result(1));
    expect((await reader.read()).done).toBe(true);
    expect(store.size).toBe(before);
    // A resume of it replays nothing, and ends: its answer went out already.
    const late = await get(endpoint, priming.id);
    expect([late.status, await late.text()]).toEqual([200, '']);

    const unread = await call(endpoint, [ping(2)]);
    await endpoint.send(progress(2), { relatedRequestId: 2 });
    await endpoint.send(result(2));
    expect(store.size).toBe(before + 2);
    expect(eventsOf(await unread.text()).filter((e) => e.data !== '').map((e) => JSON.parse(e.data) as unknown)).toEqual([progress(2), result(2)]);
  });

  it('resumes from an evicted event with what its stream still holds, no error, and the answer still to come', async () => {
    const { endpoint } = await opened({ eventStore: new SessionEventStore({ maxEvents: 2 }) });
    const call1 = await call(endpoint, [ping(1)]);
    const reader = call1.body!.getReader();
    await nextEvent(reader);
    const pending = nextEvent(reader);
    await endpoint.send(progress(1), { relatedRequestId: 1 });
    const seen = await pending;
    await reader.cancel();
    for (let n = 2; n <= 4; n++) await endpoint.send(progress(n), { relatedRequestId: 1 });

    const resumed = await get(endpoint, seen.id);
    expect(resumed.status).toBe(200);
    await endpoint.send(result(1));
    const replayed = eventsOf(await resumed.text()).map((e) => JSON.parse(e.data) as unknown);
    // Events 1 and 2 were evicted; nothing of them comes back.
    expect(replayed).toEqual([progress(3), progress(4), result(1)]);
  });
});
