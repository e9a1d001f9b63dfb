/**
 * The agent side of every measurement: the real MCP SDK `Client`, over Streamable HTTP for every
 * proxy (Switchyard, supergateway, mcp-proxy) and over stdio for the direct baseline, so the
 * numbers compare transports and proxies, never different client code.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { EVERYTHING } from './processes.ts';

export interface Agent {
  client: Client;
  /** One echo of `message` through `tool`; throws unless the answer is the expected text. */
  echo?(tool: string, message: string): Promise<void>;
  /** Pid of the server process when the client spawned it (stdio), else undefined. */
  serverPid?: number;
  close(): Promise<void>;
}

/** An SDK client over Streamable HTTP, with a bearer token when given. */
export async function connectHttp(url: string, token?: string): Promise<Agent> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithOwnSignal, ...(token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } }) });
  const client = new Client({ name: 'switchyard-bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    async close() {
      // DELETE ends the session (and with it the server process) before the client goes.
      await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    },
  };
}

/**
 * fetch for the SDK transport, which hands its one session-long AbortSignal to every POST: undici
 * adds an abort listener to that signal per request and removes it only once the request object is
 * garbage-collected, so a session of a few thousand calls piled them up (a
 * MaxListenersExceededWarning past 1,500, printed in the latency section). Each POST gets a signal of its own instead,
 * aborted with the session's until its answer has arrived; then the link is cut, so nothing
 * accumulates. (`AbortSignal.any` would keep the abort for the body too, but under Node 20 it
 * retains about 50 bytes per call.) The body is read right after by the SDK, and the bench ends a
 * session with a DELETE before aborting, so no body read is left waiting on the abort. The GET
 * stream, one per session, keeps the session's signal.
 */
const fetchWithOwnSignal: FetchLike = async (url, init) => {
  const parent = init?.signal;
  if (init === undefined || parent === undefined || parent === null || init.method !== 'POST') return fetch(url, init);
  const own = new AbortController();
  const abort = () => own.abort(parent.reason);
  if (parent.aborted) abort();
  else parent.addEventListener('abort', abort, { once: true });
  try {
    return await fetch(url, { ...init, signal: own.signal });
  } finally {
    parent.removeEventListener('abort', abort);
  }
};

/** An SDK client that spawns server-everything over stdio: the baseline with no proxy at all. */
export async function connectStdio(): Promise<Agent> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' });
  const client = new Client({ name: 'switchyard-bench', version: '1.0.0' });
  await client.connect(transport);
  return { client, serverPid: transport.pid ?? undefined, close: () => client.close().catch(() => {}) };
}

/** One echo call; throws unless the answer is the expected text. */
export async function echo(client: Client, tool: string, message: string): Promise<void> {
  const result = await client.callTool({ name: tool, arguments: { message } });
  expectEcho(result, message);
}

/** Throws unless `result` is the echo of `message`. */
export function expectEcho(result: Record<string, unknown>, message: string): void {
  const first = (result.content as Array<{ type: string; text?: string }> | undefined)?.[0];
  if (result.isError === true || first?.text !== `Echo: ${message}`) throw new Error(`Unexpected echo answer: ${JSON.stringify(result).slice(0, 300)}`);
}

/**
 * A modern (2026-07-28) agent: no session, every echo one stateless POST carrying the version in
 * `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers (as
 * `test/modern/modern-client.ts` sends them). No SDK speaks the modern era yet, so this is fetch;
 * its `client` is a placeholder that is never called.
 */
export function modernAgent(url: string, token: string): Agent {
  let id = 1;
  const headers = (name: string) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'switchyard-bench-modern', version: '1.0.0' },
  };
  return {
    client: new Client({ name: 'switchyard-bench-modern', version: '1.0.0' }),
    async echo(tool, message) {
      const body = { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: tool, arguments: { message }, _meta: meta } };
      const response = await fetch(url, { method: 'POST', headers: headers(tool), body: JSON.stringify(body) });
      const text = await response.text();
      const data = (response.headers.get('content-type') ?? '').startsWith('text/event-stream') ? lastSseData(text) : text;
      const answer = JSON.parse(data) as { result?: Record<string, unknown>; error?: unknown };
      if (answer.result === undefined) throw new Error(`Unexpected modern answer (${response.status}): ${data.slice(0, 300)}`);
      expectEcho(answer.result, message);
    },
    close: async () => {},
  };
}

const MODERN_VERSION = '2026-07-28';

function lastSseData(text: string): string {
  const events = text.split(/\r?\n\r?\n/).map((e) => e.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n')).filter(Boolean);
  return events.at(-1) ?? '';
}

/** An agent's echo: its own (modern) or the SDK client's `tools/call`. */
export function echoOf(agent: Agent): (tool: string, message: string) => Promise<void> {
  return agent.echo ?? ((tool, message) => echo(agent.client, tool, message));
}

export interface Timed {
  /** Per-call latency in ms, in call order. */
  latencies: number[];
  /** Wall time of the whole loop in ms. */
  wallMs: number;
  errors: number;
  firstError?: string;
}

/**
 * `count` sequential echo calls after `warmup` untimed ones. Errors are counted, not thrown, so a
 * flaky variant shows up in the table instead of ending the run.
 */
export async function echoLoop(client: Client | Agent, tool: string, count: number, warmup = 0, tag = 'bench', payload = ''): Promise<Timed> {
  const call = client instanceof Client ? (t: string, m: string) => echo(client, t, m) : echoOf(client);
  for (let i = 0; i < warmup; i++) await call(tool, `${tag} warmup ${i}${payload}`);
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    try {
      await call(tool, `${tag} ${i}${payload}`);
      latencies.push(performance.now() - t0);
    } catch (error) {
      errors++;
      firstError ??= error instanceof Error ? error.message : String(error);
    }
  }
  return { latencies, wallMs: performance.now() - start, errors, ...(firstError !== undefined ? { firstError } : {}) };
}
