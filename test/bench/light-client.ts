/**
 * A light legacy Streamable HTTP agent for the concurrency measurement: one `initialize` +
 * `notifications/initialized` per session, then `tools/call` POSTs, and a DELETE at the end. On two
 * cores the SDK client's CPU per call is as large as a gateway's, which caps the calls/s ratio
 * between two gateways however cheap one gets; this client costs little, and drives both gateways
 * the same way, so the ratio is the gateways'.
 *
 * It sends over `node:http` with a keep-alive Agent by default (`LIGHT_TRANSPORT`): plain fetch
 * cost about 1 ms of CPU per call itself, still a cap on two cores. The floor section measures
 * both (`floor.ts`, "light client's own CPU per call").
 *
 * @module
 */
import { Agent as HttpAgent, request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { expectEcho, type Agent } from './client.ts';

interface Answer {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code?: number; message?: string };
}

/**
 * The result of the JSON-RPC response with `id` in a POST's body, JSON or SSE (by `contentType`).
 * Notifications and requests on the stream are skipped; throws when the answer is an error, when
 * no message answers `id`, or when the one JSON answer carries another id.
 */
export function readAnswer(text: string, contentType: string, id: number): Record<string, unknown> {
  const messages = contentType.startsWith('text/event-stream') ? sseData(text).map((d) => JSON.parse(d) as Answer) : [JSON.parse(text) as Answer];
  const answer = messages.find((m) => m.id === id && (m.result !== undefined || m.error !== undefined));
  if (answer === undefined) throw new Error(`No answer to request ${id}: ${text.slice(0, 300)}`);
  if (answer.error !== undefined) throw new Error(`Request ${id} failed: ${answer.error.code ?? '?'} ${answer.error.message ?? ''}`);
  return answer.result!;
}

/** The data of each SSE event (its `data:` lines joined), events without data left out. */
function sseData(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((event) => event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n'))
    .filter((data) => data !== '');
}

/** One HTTP exchange as the light client needs it: status, one header by lower-case name, the body as text. */
export interface LightResponse {
  status: number;
  header(name: string): string | null;
  text: string;
}

/** How a light session sends its requests (`fetchExchange` or `httpExchange`); `close` frees its connection. */
export interface Exchange {
  send(method: 'POST' | 'DELETE', headers: Record<string, string>, body?: string): Promise<LightResponse>;
  close(): void;
}

/** The web-standard way: global fetch (undici), its own connection pool. */
export function fetchExchange(url: string): Exchange {
  return {
    async send(method, headers, body) {
      const response = await fetch(url, body === undefined ? { method, headers } : { method, headers, body });
      return { status: response.status, header: (name) => response.headers.get(name), text: await response.text() };
    },
    close() {},
  };
}

/**
 * `node:http` with a keep-alive Agent of one socket per session (its calls are sequential): no
 * WHATWG Request, Headers or stream objects per call, which is most of what fetch costs.
 */
export function httpExchange(url: string): Exchange {
  const target = new URL(url);
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const path = target.pathname + target.search;
  return {
    send: (method, headers, body) =>
      new Promise((resolve, reject) => {
        const outgoing = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
        const req = request({ agent, host: target.hostname, port: target.port, path, method, headers: outgoing }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, header: (name) => single(res.headers[name]), text }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      }),
    close: () => agent.destroy(),
  };
}

const single = (value: string | string[] | undefined): string | null => (typeof value === 'string' ? value : (value?.[0] ?? null));

/** Which HTTP client the light sessions use: `http` (node:http, keep-alive Agent) or `fetch`. */
export type LightTransport = 'http' | 'fetch';

/** The light rows' HTTP client, in the concurrency and floor sections alike. */
export const LIGHT_TRANSPORT: LightTransport = 'http';

const EXCHANGES: Record<LightTransport, (url: string) => Exchange> = { http: httpExchange, fetch: fetchExchange };

/** Opens a legacy session on `url`; its `client` is a placeholder that is never called. */
export async function connectLight(url: string, token?: string, transport: LightTransport = LIGHT_TRANSPORT): Promise<Agent> {
  const exchange = EXCHANGES[transport](url);
  const base: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (token !== undefined) base.authorization = `Bearer ${token}`;
  let nextId = 1;
  const call = async (headers: Record<string, string>, method: string, params: unknown) => {
    const id = nextId++;
    const response = await exchange.send('POST', headers, JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    if (response.status < 200 || response.status > 299) throw new Error(`${method} answered ${response.status}: ${response.text.slice(0, 300)}`);
    return { response, result: readAnswer(response.text, response.header('content-type') ?? '', id) };
  };
  try {
    const init = await call(base, 'initialize', { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'switchyard-bench-light', version: '1.0.0' } });
    const sessionId = init.response.header('mcp-session-id');
    if (sessionId === null) throw new Error('Initialize answered without an Mcp-Session-Id');
    const headers = { ...base, 'mcp-session-id': sessionId, 'mcp-protocol-version': String(init.result.protocolVersion) };
    const initialized = await exchange.send('POST', headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    if (initialized.status < 200 || initialized.status > 299) throw new Error(`notifications/initialized answered ${initialized.status}`);
    return {
      client: new Client({ name: 'switchyard-bench-light', version: '1.0.0' }),
      async echo(tool, message) {
        expectEcho((await call(headers, 'tools/call', { name: tool, arguments: { message } })).result, message);
      },
      async close() {
        await exchange.send('DELETE', headers).catch(() => undefined);
        exchange.close();
      },
    };
  } catch (error) {
    exchange.close();
    throw error;
  }
}

const MODERN_VERSION = '2026-07-28';

/** A modern agent on the light client: one stateless POST per echo, the headers `modernAgent` sends. */
export function connectLightModern(url: string, token: string): Agent {
  const exchange = httpExchange(url);
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'switchyard-bench-modern', version: '1.0.0' },
  };
  let id = 1;
  return {
    client: undefined as never,
    async echo(tool, message) {
      const headers = {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': tool,
      };
      const n = id++;
      const body = { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: tool, arguments: { message }, _meta: meta } };
      const response = await exchange.send('POST', headers, JSON.stringify(body));
      expectEcho(readAnswer(response.text, response.header('content-type') ?? '', n), message);
    },
    close: async () => exchange.close(),
  };
}
