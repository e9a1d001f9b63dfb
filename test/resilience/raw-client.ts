/**
 * A minimal Streamable HTTP MCP client on `node:http` with keep-alive, for the load test.
 *
 * Why not the SDK `Client`: measured on 2 cores, the SDK client (fetch, SSE parser, zod on every
 * result) cost the test process about as much CPU per call as the worker and the sidecar
 * together, so 10,000 calls took twice the time budget. This client does only what the load test
 * checks: initialize, `tools/call`, a notification, and DELETE, reading the SSE answer of each POST to its end
 * and picking the JSON-RPC response by id. It is not a general client (no server→client
 * requests, no resumption); the fault and security files use the SDK client.
 *
 * @module
 */
import { Agent, request } from 'node:http';

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export interface RpcAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON-RPC messages in the body (one for JSON, every `data:` event for SSE). */
  messages: Array<Record<string, unknown>>;
  body: string;
}

/** One HTTP exchange; `body` is sent as given (a string) or JSON-encoded. */
export function exchange(url: string, options: { method?: string; headers?: Record<string, string>; body?: unknown }): Promise<RpcAnswer> {
  const text = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'POST',
        agent,
        headers: {
          accept: 'application/json, text/event-stream',
          ...(text !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) } : {}),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, messages: parseMessages(body, String(res.headers['content-type'] ?? '')), body });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

function parseMessages(body: string, type: string): Array<Record<string, unknown>> {
  const texts = type.includes('text/event-stream')
    ? body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((l) => l !== '')
    : body.trim() === '' ? [] : [body];
  return texts.flatMap((t) => {
    try {
      const value: unknown = JSON.parse(t);
      return (Array.isArray(value) ? value : [value]).filter((v): v is Record<string, unknown> => typeof v === 'object' && v !== null);
    } catch {
      return [];
    }
  });
}

export class RawSession {
  #nextId = 1;

  private constructor(
    readonly url: string,
    readonly token: string,
    readonly id: string,
    readonly protocolVersion: string,
  ) {}

  /** Initializes a session (initialize + notifications/initialized); throws with the body on failure. */
  static async open(url: string, token: string): Promise<RawSession> {
    const init = await exchange(url, {
      headers: { authorization: `Bearer ${token}` },
      body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-load', version: '1' } } },
    });
    const id = init.headers['mcp-session-id'];
    const result = init.messages.find((m) => m.id === 0)?.result as { protocolVersion?: string } | undefined;
    if (init.status !== 200 || typeof id !== 'string' || result === undefined) throw new Error(`initialize failed (${init.status}): ${init.body.slice(0, 500)}`);
    const session = new RawSession(url, token, id, result.protocolVersion ?? '2025-06-18');
    await exchange(url, { headers: session.#headers(), body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    return session;
  }

  /** Sends one request; resolves with its JSON-RPC response (result or error). */
  async request(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    const answer = await exchange(this.url, { headers: this.#headers(), body: { jsonrpc: '2.0', id, method, params } });
    const response = answer.messages.find((m) => m.id === id && ('result' in m || 'error' in m));
    if (response === undefined) throw new Error(`no response to request ${id} (${answer.status}): ${answer.body.slice(0, 500)}`);
    return response;
  }

  /** The id the last `request` was sent with, to cancel it. */
  get lastRequestId(): number {
    return this.#nextId - 1;
  }

  /** Sends one notification; resolves with the HTTP status (202 when taken). */
  async notify(method: string, params: Record<string, unknown>): Promise<number> {
    return (await exchange(this.url, { headers: this.#headers(), body: { jsonrpc: '2.0', method, params } })).status;
  }

  /** Ends the session (DELETE). */
  async close(): Promise<number> {
    return (await exchange(this.url, { method: 'DELETE', headers: this.#headers() })).status;
  }

  #headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, 'mcp-session-id': this.id, 'mcp-protocol-version': this.protocolVersion };
  }
}
