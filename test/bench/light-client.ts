/**
 * A light legacy Streamable HTTP agent for the concurrency measurement: plain fetch, one
 * `initialize` + `notifications/initialized` per session, then `tools/call` POSTs, and a DELETE at
 * the end. On two cores the SDK client's CPU per call is as large as a gateway's, which caps the
 * calls/s ratio between two gateways however cheap one gets; this client costs little, and drives
 * both gateways the same way, so the ratio is the gateways'.
 *
 * @module
 */
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

/** Opens a legacy session on `url` with fetch; its `client` is a placeholder that is never called. */
export async function connectLight(url: string, token?: string): Promise<Agent> {
  const base: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (token !== undefined) base.authorization = `Bearer ${token}`;
  let nextId = 1;
  const request = async (headers: Record<string, string>, method: string, params: unknown) => {
    const id = nextId++;
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} answered ${response.status}: ${text.slice(0, 300)}`);
    return { response, result: readAnswer(text, response.headers.get('content-type') ?? '', id) };
  };
  const init = await request(base, 'initialize', { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'switchyard-bench-light', version: '1.0.0' } });
  const sessionId = init.response.headers.get('mcp-session-id');
  if (sessionId === null) throw new Error('Initialize answered without an Mcp-Session-Id');
  const headers = { ...base, 'mcp-session-id': sessionId, 'mcp-protocol-version': String(init.result.protocolVersion) };
  const initialized = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await initialized.body?.cancel();
  if (!initialized.ok) throw new Error(`notifications/initialized answered ${initialized.status}`);
  return {
    client: new Client({ name: 'switchyard-bench-light', version: '1.0.0' }),
    async echo(tool, message) {
      expectEcho((await request(headers, 'tools/call', { name: tool, arguments: { message } })).result, message);
    },
    async close() {
      const response = await fetch(url, { method: 'DELETE', headers }).catch(() => undefined);
      await response?.body?.cancel();
    },
  };
}
