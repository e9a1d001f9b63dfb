/**
 * A modern (2026-07-28) agent in raw HTTP, since no declared dependency speaks it: every POST
 * carries `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` where the method mirrors one, and the
 * per-request `_meta`; the answer is read as JSON or as the request's SSE stream.
 *
 * @module
 */

export const MODERN = '2026-07-28';

export interface ModernAnswer {
  status: number;
  headers: Headers;
  /** Every JSON-RPC message of the answer, in order (one for JSON, the events for SSE). */
  messages: Array<Record<string, any>>;
  /** The last message: the response. */
  response: Record<string, any>;
  sse: boolean;
}

export interface ModernCall {
  id?: string | number;
  /** `_meta` keys beyond the required ones (progressToken, logLevel, clientInfo). */
  meta?: Record<string, unknown>;
  /** Headers that replace or add to the standard ones; `null` removes one. */
  headers?: Record<string, string | null>;
  signal?: AbortSignal;
}

let nextId = 1;

export function modernMeta(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'modern-e2e-agent', version: '1.0.0' },
    ...extra,
  };
}

export async function modernPost(url: string, token: string, method: string, params: Record<string, unknown> = {}, call: ModernCall = {}): Promise<ModernAnswer> {
  const id = call.id ?? nextId++;
  const name = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  };
  for (const [key, value] of Object.entries(call.headers ?? {})) {
    if (value === null) delete headers[key];
    else headers[key] = value;
  }
  const body = { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta(call.meta) } };
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), ...(call.signal ? { signal: call.signal } : {}) });
  const sse = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const text = await response.text();
  const messages = sse
    ? text.split(/\r?\n\r?\n/).map((event) => event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n')).filter(Boolean).map((d) => JSON.parse(d))
    : text === '' ? [] : [JSON.parse(text)];
  return { status: response.status, headers: response.headers, messages, response: messages.at(-1) ?? {}, sse };
}
