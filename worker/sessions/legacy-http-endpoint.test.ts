import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { keepRawText, RAW_TEXT_MIN_CHARS } from '../../shared/raw-message-text.ts';
import { SessionEventStore } from '../passthrough/session-event-store.ts';
import { LegacyHttpEndpoint, takeOverOpenStreams, type LegacyHttpEndpointOptions } from './legacy-http-endpoint.ts';
import { MAX_LEGACY_BODY_BYTES } from './legacy-post-body.ts';
import { eventsOf, type SseEvent } from '../../test/support/sse-events.ts';

const URL_ = 'http://127.0.0.1/servers/alpha/mcp';
const ID = 'session-1';
const BASE_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const SESSION = { ...BASE_HEADERS, 'mcp-session-id': ID, 'mcp-protocol-version': '2025-06-18' };
const initialize = (version = '2025-06-18') => ({
  jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });
const result = (id: number | string, extra: Record<string, unknown> = {}): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { ...extra } });

function post(body: unknown, headers: Record<string, string> = SESSION): Request {
  return new Request(URL_, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** A POST handed over already parsed, as the session route does: its messages are passed on before this returns. */
function callOf(endpoint: LegacyHttpEndpoint, body: unknown, headers: Record<string, string> = SESSION): Promise<Response> {
  return endpoint.handleRequest(post(body, headers), { kind: 'json', value: body });
}

/** An endpoint past initialize, with what it passed on. */
async function opened(options: Partial<LegacyHttpEndpointOptions> = {}, version = '2025-06-18') {
  const endpoint = new LegacyHttpEndpoint({ sessionId: ID, ...options });
  const received: JSONRPCMessage[] = [];
  endpoint.onmessage = (message) => void received.push(message);
  const init = await endpoint.handleRequest(post(initialize(version), BASE_HEADERS));
  await endpoint.send(result(0, { protocolVersion: version }));
  return { endpoint, received, init };
}

/** Reads a stream's events until `count` have arrived, then drops the stream. */
async function readThenDrop(response: Response, count: number): Promise<SseEvent[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  while (eventsOf(text).length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    text += value;
  }
  await reader.cancel();
  return eventsOf(text);
}

async function errorOf(response: Response): Promise<[number, number, string]> {
  const body = (await response.json()) as { id: unknown; error: { code: number; message: string; data: { reason: string } } };
  expect(body.id).toBeNull();
  return [response.status, body.error.code, body.error.data.reason];
}

describe('LegacyHttpEndpoint', () => {
  it('answers an initialize on an SSE stream with the session id, and ends the stream after the answer', async () => {
    const { init, received } = await opened();
    expect(init.status).toBe(200);
    expect(init.headers.get('content-type')).toBe('text/event-stream');
    expect(init.headers.get('mcp-session-id')).toBe(ID);
    expect(received).toEqual([initialize()]);
    expect(eventsOf(await init.text())).toEqual([{ data: JSON.stringify(result(0, { protocolVersion: '2025-06-18' })) }]);
  });

  it('takes notifications and responses with 202, and ends a batch stream only after its last answer', async () => {
    const { endpoint, received } = await opened();
    const accepted = await endpoint.handleRequest(post({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    expect([accepted.status, await accepted.text()]).toEqual([202, '']);
    const batch = await endpoint.handleRequest(post([ping(1), ping('two')]));
    await endpoint.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }, { relatedRequestId: 1 });
    await endpoint.send(result('two'));
    await endpoint.send(result(1));
    expect(eventsOf(await batch.text()).map((e) => JSON.parse(e.data))).toEqual([
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
      result('two'),
      result(1),
    ]);
    expect(received.map((m) => ('method' in m ? m.method : 'response'))).toEqual(['initialize', 'notifications/initialized', 'ping', 'ping']);
  });

  it('answers a lone request whose answer comes first with that answer as plain JSON', async () => {
    const store = new SessionEventStore();
    const { endpoint } = await opened({ eventStore: store }, '2025-11-25');
    const stored = store.size;
    const call = callOf(endpoint, ping(4), { ...SESSION, 'mcp-protocol-version': '2025-11-25' });
    await endpoint.send(result(4, { ok: true }));
    const response = await call;
    expect([response.status, response.headers.get('content-type'), response.headers.get('mcp-session-id')]).toEqual([200, 'application/json', ID]);
    expect(await response.json()).toEqual(result(4, { ok: true }));
    expect(store.size).toBe(stored); // no event id went out, so nothing is kept for a resume
    await expect(endpoint.send(result(4))).rejects.toThrow('No connection established for request ID: 4');
  });

  it('starts the SSE stream, primed, when a notification for the lone request comes before its answer', async () => {
    const { endpoint } = await opened({ eventStore: new SessionEventStore() }, '2025-11-25');
    const call = callOf(endpoint, ping(6), { ...SESSION, 'mcp-protocol-version': '2025-11-25' });
    const progress: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } };
    await endpoint.send(progress, { relatedRequestId: 6 });
    await endpoint.send(result(6));
    const response = await call;
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(eventsOf(await response.text()).map((e) => [typeof e.id, e.data])).toEqual([['string', ''], ['string', JSON.stringify(progress)], ['string', JSON.stringify(result(6))]]);
  });

  it('starts the SSE stream once the JSON window has passed, and keeps a batch of one on SSE', async () => {
    const { endpoint } = await opened({ eventStore: new SessionEventStore() }, '2025-11-25');
    const headers = { ...SESSION, 'mcp-protocol-version': '2025-11-25' };
    const slow = await callOf(endpoint, ping(10), headers); // resolves when the window passes, unanswered
    expect(slow.headers.get('content-type')).toBe('text/event-stream');
    const [priming] = await readThenDrop(slow, 1);
    expect(priming).toEqual({ id: expect.any(String), data: '' });
    await endpoint.send(result(10)); // kept for the resume the priming id allows
    const resumed = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: { ...headers, 'last-event-id': priming!.id! } }));
    expect((await readThenDrop(resumed, 1)).map((e) => JSON.parse(e.data))).toEqual([result(10)]);
    const batch = callOf(endpoint, [ping(11)], headers);
    await endpoint.send(result(11));
    expect((await batch).headers.get('content-type')).toBe('text/event-stream');
  });

  it('gives a POST still waiting for its answer an ended stream when the session closes', async () => {
    const { endpoint } = await opened();
    const call = callOf(endpoint, ping(12));
    await endpoint.close();
    const response = await call;
    expect([response.status, response.headers.get('content-type'), await response.text()]).toEqual([200, 'text/event-stream', '']);
  });

  it('reads the body itself when not given one, within the limit', async () => {
    const { endpoint, received } = await opened();
    const answer = endpoint.handleRequest(post(ping(3)));
    await expect.poll(() => received.length).toBe(2);
    await endpoint.send(result(3));
    expect((await answer).status).toBe(200);
    const big = new Request(URL_, { method: 'POST', headers: { ...SESSION, 'content-length': String(MAX_LEGACY_BODY_BYTES + 1) }, body: 'x' });
    expect(await errorOf(await endpoint.handleRequest(big))).toEqual([413, -32000, 'invalid-request']);
  });

  it('refuses what the SDK transport refused, with its status and code and a reason', async () => {
    const { endpoint } = await opened();
    const cases: Array<[Request, number, number]> = [
      [post(ping(1), { ...SESSION, accept: 'application/json' }), 406, -32000],
      [post(ping(1), { ...SESSION, 'content-type': 'text/plain; x=application/json' }), 415, -32000],
      [post('{{{'), 400, -32700],
      [post({ jsonrpc: '2.0', id: {}, method: 5 }), 400, -32700],
      [post({ ...ping(1), extra: true }), 400, -32700],
      // Past 2^53 an id is not the one sent, and the server behind would drop the request unanswered.
      [post({ ...ping(1), id: 2 ** 53 }), 400, -32700],
      [post({ ...ping(1), params: { _meta: { progressToken: 2 ** 53 } } }), 400, -32700],
      [post(Array.from({ length: 101 }, (_, id) => ping(id))), 400, -32600],
      [post(initialize()), 400, -32600],
      [post(ping(1), BASE_HEADERS), 400, -32000],
      [post(ping(1), { ...SESSION, 'mcp-session-id': 'other' }), 404, -32001],
      [post(ping(1), { ...SESSION, 'mcp-protocol-version': '1999-01-01' }), 400, -32000],
      [new Request(URL_, { method: 'GET', headers: { ...SESSION, accept: 'application/json' } }), 406, -32000],
      [new Request(URL_, { method: 'PUT', headers: SESSION }), 405, -32000],
    ];
    for (const [request, status, code] of cases) expect(await errorOf(await endpoint.handleRequest(request))).toEqual([status, code, 'invalid-request']);
    const put = await endpoint.handleRequest(new Request(URL_, { method: 'PUT', headers: SESSION }));
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE');
  });

  it('refuses a batch with an initialize and anything before initialize', async () => {
    const fresh = new LegacyHttpEndpoint({ sessionId: ID });
    expect(await errorOf(await fresh.handleRequest(post([initialize(), ping(1)], BASE_HEADERS)))).toEqual([400, -32600, 'invalid-request']);
    expect(await errorOf(await fresh.handleRequest(post(ping(1))))).toEqual([400, -32000, 'invalid-request']);
  });

  it('sends unrelated messages on the one standalone GET stream', async () => {
    const { endpoint } = await opened();
    const get = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION }));
    expect([get.status, get.headers.get('mcp-session-id')]).toEqual([200, ID]);
    expect(await errorOf(await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION })))).toEqual([409, -32000, 'invalid-request']);
    const note: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
    await endpoint.send(note);
    expect(await readThenDrop(get, 1)).toEqual([{ data: JSON.stringify(note) }]);
    await expect(endpoint.send(result(99))).rejects.toThrow('No connection established for request ID: 99');
    await expect(endpoint.send({ jsonrpc: '2.0', error: { code: 1, message: 'm' } } as JSONRPCMessage)).rejects.toThrow('standalone SSE stream');
  });

  it('where a gone connection is seen late (Workers), lets a GET take an open stream over, at most once in 5 s (review s22)', async () => {
    takeOverOpenStreams();
    try {
      const { endpoint } = await opened();
      const old = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION }));
      const get = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION }));
      expect(get.status).toBe(200);
      await expect(old.body!.getReader().read()).rejects.toThrow("A newer GET took this stream's place");
      // A third at once is another client sharing the session, not a reconnect: no loop of take-overs.
      expect(await errorOf(await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION })))).toEqual([409, -32000, 'invalid-request']);
      const note: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
      await endpoint.send(note);
      expect(await readThenDrop(get, 1)).toEqual([{ data: JSON.stringify(note) }]);
    } finally {
      takeOverOpenStreams(false);
    }
  });

  it('where a gone connection is seen late, lets an agent take back its GET stream and a POST\'s stream at once (review of s22: the second got 409)', async () => {
    takeOverOpenStreams();
    try {
      const { endpoint } = await opened({ eventStore: new SessionEventStore() }, '2025-11-25');
      const headers = { ...SESSION, 'mcp-protocol-version': '2025-11-25' };
      await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers }));
      const slow = await callOf(endpoint, ping(10), headers); // its SSE stream, primed
      const reader = slow.body!.getReader(); // read and left open: a connection gone unseen
      const priming = eventsOf(new TextDecoder().decode((await reader.read()).value))[0]!;
      expect((await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers }))).status).toBe(200);
      const resumed = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: { ...headers, 'last-event-id': priming.id! } }));
      expect(resumed.status).toBe(200);
      await endpoint.send(result(10));
      expect((await readThenDrop(resumed, 1)).map((e) => JSON.parse(e.data))).toEqual([result(10)]);
    } finally {
      takeOverOpenStreams(false);
    }
  });

  it('without an event store, an answer for a stream the agent closed cannot be delivered', async () => {
    const { endpoint } = await opened();
    const call = await endpoint.handleRequest(post(ping(5)));
    await call.body!.cancel();
    await expect(endpoint.send(result(5))).rejects.toThrow('No connection established for request ID: 5');
  });

  it('with an event store, primes 2025-11-25 streams with an id and replays what a dropped stream missed', async () => {
    const { endpoint, init } = await opened({ eventStore: new SessionEventStore() }, '2025-11-25');
    const [priming] = eventsOf(await init.text());
    expect(priming).toEqual({ id: expect.any(String), data: '' });
    const headers = { ...SESSION, 'mcp-protocol-version': '2025-11-25' };
    const call = await endpoint.handleRequest(post(ping(7), headers));
    const [first] = await readThenDrop(call, 1);
    const progress: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } };
    await endpoint.send(progress, { relatedRequestId: 7 });
    await endpoint.send(result(7)); // the stream is gone, but the answer is kept for the resume
    const resumed = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: { ...headers, 'last-event-id': first!.id! } }));
    expect(resumed.status).toBe(200);
    expect((await readThenDrop(resumed, 2)).map((e) => [typeof e.id, JSON.parse(e.data)])).toEqual([['string', progress], ['string', result(7)]]);
    const unknown = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: { ...headers, 'last-event-id': 'nope' } }));
    expect(await errorOf(unknown)).toEqual([400, -32000, 'invalid-request']);
  });

  it('primes no stream of an older version, whose clients cannot read an empty event', async () => {
    const { endpoint, init } = await opened({ eventStore: new SessionEventStore() });
    expect(eventsOf(await init.text()).map((e) => e.data)).toEqual([JSON.stringify(result(0, { protocolVersion: '2025-06-18' }))]);
    const call = await endpoint.handleRequest(post(ping(8)));
    await endpoint.send(result(8));
    expect(eventsOf(await call.text())).toEqual([{ id: expect.any(String), data: JSON.stringify(result(8)) }]);
  });

  it('writes a large message forwarded unchanged as the text it was read from', async () => {
    const { endpoint } = await opened();
    const text = `{ "jsonrpc": "2.0", "id": 9, "result": { "pad": "${'x'.repeat(RAW_TEXT_MIN_CHARS)}" } }`;
    const message = JSON.parse(text) as JSONRPCMessage;
    keepRawText(message, text);
    const call = await endpoint.handleRequest(post(ping(9)));
    await endpoint.send(message);
    expect(eventsOf(await call.text())).toEqual([{ data: text }]);
  });

  it('ends the session on DELETE: told first, then every stream ends and later requests find no session', async () => {
    const told: string[] = [];
    const { endpoint } = await opened({ onsessionclosed: () => void told.push('closed') });
    endpoint.onclose = () => void told.push('onclose');
    const get = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION }));
    const deleted = await endpoint.handleRequest(new Request(URL_, { method: 'DELETE', headers: SESSION }));
    expect(deleted.status).toBe(200);
    expect(told).toEqual(['closed', 'onclose']);
    expect(await get.text()).toBe('');
    expect(await errorOf(await endpoint.handleRequest(post(ping(1))))).toEqual([404, -32001, 'invalid-request']);
  });

  it('refuses a lone request whose id is in flight with 400 naming the id, and the first request still gets its answer', async () => {
    const { endpoint, received } = await opened();
    const reused: unknown[] = [];
    endpoint.onrefused = (request, error) => void reused.push([request.id, error.reason]);
    const first = callOf(endpoint, ping(5));
    const second = await callOf(endpoint, { ...ping(5), method: 'tools/list' });
    expect(second.status).toBe(400);
    expect(await second.json()).toEqual({
      jsonrpc: '2.0', id: 5,
      error: { code: -32600, message: 'Request refused: id 5 is already in use by a request in flight in this session', data: { reason: 'invalid-request' } },
    });
    await endpoint.send(result(5, { first: true }));
    expect(await (await first).json()).toEqual(result(5, { first: true }));
    expect(received.map((m) => ('method' in m ? m.method : 'response'))).toEqual(['initialize', 'ping']);
    expect(reused).toEqual([[5, 'invalid-request']]);
    // Answered, the id is free again.
    const third = callOf(endpoint, ping(5));
    await endpoint.send(result(5, { third: true }));
    expect(await (await third).json()).toEqual(result(5, { third: true }));
  });

  it('refuses, inside a batch, each request repeating an id of the batch or one in flight, and the rest go on', async () => {
    const { endpoint, received } = await opened();
    const reused: unknown[] = [];
    endpoint.onrefused = (request) => void reused.push(request.id);
    const lone = callOf(endpoint, [ping('a')]);
    const batch = await callOf(endpoint, [ping(7), { ...ping(7), method: 'tools/list' }, ping('a'), ping(8)]);
    expect(batch.status).toBe(200);
    expect(received.filter((m) => 'id' in m).map((m) => [(m as { id: unknown }).id, (m as { method: string }).method])).toEqual([[0, 'initialize'], ['a', 'ping'], [7, 'ping'], [8, 'ping']]);
    expect(reused).toEqual([7, 'a']);
    await endpoint.send(result(8));
    await endpoint.send(result(7));
    await endpoint.send(result('a'));
    const events = eventsOf(await batch.text()).map((e) => JSON.parse(e.data));
    expect(events.slice(0, 2).map((e) => [e.id, e.error.code, e.error.data.reason, e.error.message])).toEqual([
      [7, -32600, 'invalid-request', 'Request refused: id 7 is used by an earlier request of this batch'],
      ['a', -32600, 'invalid-request', 'Request refused: id "a" is already in use by a request in flight in this session'],
    ]);
    expect(events.slice(2)).toEqual([result(8), result(7)]);
    expect(eventsOf(await (await lone).text()).map((e) => JSON.parse(e.data))).toEqual([result('a')]);
  });

  it('refuses a batch whose every request reuses an id with 400 and one error each, passing its notifications on', async () => {
    const { endpoint, received } = await opened();
    void callOf(endpoint, ping(1));
    const batch = await callOf(endpoint, [ping(1), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }, ping(1)]);
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as Array<{ id: number; error: { data: unknown } }>).map((e) => [e.id, e.error.data])).toEqual([[1, { reason: 'invalid-request' }], [1, { reason: 'invalid-request' }]]);
    expect(received.map((m) => ('method' in m ? m.method : 'response'))).toEqual(['initialize', 'ping', 'notifications/cancelled']);
  });

  it('lets an id answered inside a batch still running be used again, and routes its answer to the new request', async () => {
    const { endpoint } = await opened();
    const batch = await callOf(endpoint, [ping(1), ping(2)]);
    await endpoint.send(result(1));
    const again = await callOf(endpoint, [ping(1)]);
    await endpoint.send(result(2));
    await endpoint.send(result(1, { again: true }));
    expect(eventsOf(await batch.text()).map((e) => JSON.parse(e.data))).toEqual([result(1), result(2)]);
    expect(eventsOf(await again.text()).map((e) => JSON.parse(e.data))).toEqual([result(1, { again: true })]);
  });

  it('writes one answer per request of a batch still running, dropping a second one for the same id (review of s21)', async () => {
    const { endpoint } = await opened();
    const batch = await callOf(endpoint, [ping(1), ping(2)]);
    await endpoint.send(result(1));
    await endpoint.send(result(1, { late: true }));
    await endpoint.send(result(2));
    expect(eventsOf(await batch.text()).map((e) => JSON.parse(e.data))).toEqual([result(1), result(2)]);
  });

  it('writes a keep-alive comment on open streams', async () => {
    const { endpoint } = await opened({ keepAliveMs: 5 });
    const get = await endpoint.handleRequest(new Request(URL_, { method: 'GET', headers: SESSION }));
    const reader = get.body!.pipeThrough(new TextDecoderStream()).getReader();
    expect((await reader.read()).value).toBe(': keepalive\n\n');
    await reader.cancel();
    await endpoint.close();
  });

  it('gives each message the headers of its request', async () => {
    const { endpoint } = await opened();
    let headers: unknown;
    endpoint.onmessage = (_message, extra) => {
      headers = extra?.requestInfo?.headers;
    };
    await endpoint.handleRequest(post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...SESSION, traceparent: 'tp' }));
    expect(headers).toMatchObject({ 'mcp-session-id': ID, traceparent: 'tp' });
    const record = headers as Record<string, string | undefined>;
    expect([record['traceparent'], record['x-absent'], record['not a header name'], 'traceparent' in record, 'x-absent' in record]).toEqual(['tp', undefined, undefined, true, false]);
    expect({ ...record }).toEqual({ ...SESSION, traceparent: 'tp' });
  });
});
