/**
 * An edge-direct HTTP server (real server-everything) under workerd, where what differs from Deno
 * and Node is when work runs and when a gone connection is seen (review s22):
 * - a modern call its agent abandons gives the agent's place under `max-requests-per-agent` back
 *   after the cancelled call's grace, and is audited as `agent-left`, however many quick calls came
 *   before. A workerd timer ends with the request that set it: one timer shared by every request
 *   stopped for good once a quick call that armed it had ended, and the work after an abandoned
 *   call's response (its grace, its channel's close) was cut with the request: after two abandoned
 *   calls the agent got 429 until the isolate was recycled;
 * - a modern `/mcp` list ends the session it opened on a server it stopped waiting for: the list's
 *   question to each server is a request of its own, whose work was held by nothing;
 * - a legacy session's GET stream dropped and opened again at once is served: the session's
 *   object learns of the old connection's end only at its next write, up to a keep-alive (30 s)
 *   later, and answered the new GET 409 until then, by which time SDK clients had given it up;
 * - a legacy session on a modern-only server is bridged from the session's own object: its
 *   `initialize` answered from the server's `server/discover`, its calls modern POSTs, and the
 *   server's change notifications heard through a listen that object keeps open.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentEntry, randomCredential } from '../support/configs.ts';
import { ProcessSet, startEverythingHttp, startModernHttp } from '../support/processes.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { startWorkerdWorker, type WorkerdWorker } from '../support/workerd-worker.ts';
import { MODERN, modernMeta, modernPost } from '../modern/modern-client.ts';
import { ListToolsRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const procs = new ProcessSet();
const token = randomCredential('alice');
/** Bob's places are his own: alice's first test leaves hers in their grace. */
const bobToken = randomCredential('bob');
/** Carol's agent has the modern-only server alone. */
const carolToken = randomCredential('carol');
let worker: WorkerdWorker;
let url: string;
let slow: SlowServer;
let modernUrl: string;

/** A legacy (session-based) HTTP MCP server whose `tools/list` takes 5 s, counting its live sessions. */
interface SlowServer {
  url: string;
  live: Set<string>;
  /** Sessions ever opened. */
  opened(): number;
  close(): Promise<void>;
}

async function startSlowServer(): Promise<SlowServer> {
  const live = new Set<string>();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let opened = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const id = req.headers['mcp-session-id'] as string | undefined;
    const transport = id === undefined ? undefined : sessions.get(id);
    if (transport !== undefined) return void transport.handleRequest(req, res, body);
    if (body?.method !== 'initialize') return void res.writeHead(404).end();
    const fresh: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => {
      sessions.set(sid, fresh);
      live.add(sid);
      opened++;
    } });
    fresh.onclose = () => live.delete(fresh.sessionId ?? '');
    const mcp = new McpServer({ name: 'slow', version: '1.0.0' });
    mcp.registerTool('wait', { description: 'Answers late' }, async () => ({ content: [] }));
    mcp.server.setRequestHandler(ListToolsRequestSchema, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5000));
      return { tools: [] };
    });
    await mcp.connect(fresh);
    await fresh.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    live,
    opened: () => opened,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

beforeAll(async () => {
  const everything = await startEverythingHttp(procs);
  slow = await startSlowServer();
  const modern = await startModernHttp(procs, fixtureServer('modern-echo-server.mjs').args[0]!);
  modernUrl = modern.url;
  worker = await startWorkerdWorker({
    agents: [agentEntry({ name: 'alice', token, servers: ['everything', 'slow'] }), agentEntry({ name: 'bob', token: bobToken, servers: ['everything', 'slow'] }), agentEntry({ name: 'carol', token: carolToken, servers: ['modern'] })],
    servers: { everything: { executor: { type: 'http', url: everything.url } }, slow: { executor: { type: 'http', url: slow.url } }, modern: { executor: { type: 'http', url: modern.url } } },
    'max-requests-per-agent': 2,
    'aggregate-start-wait-seconds': 2,
  });
  url = `${worker.url}/servers/everything/mcp`;
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await slow?.close();
  await procs.stopAll();
});

const echo = () => modernPost(url, token, 'tools/call', { name: 'echo', arguments: { message: 'quick' } });

/** Starts a long call with progress, reads its first progress event, and leaves. */
async function abandonAfterFirstProgress(id: number): Promise<void> {
  const leave = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'trigger-long-running-operation' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 120 }, _meta: modernMeta({ progressToken: `p${id}` }) } }),
    signal: leave.signal,
  });
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  const first = await response.body!.getReader().read();
  expect(new TextDecoder().decode(first.value)).toContain('notifications/progress');
  leave.abort();
}

describe('a modern call its agent abandons at the Workers edge', () => {
  it('gives the agent its place back after the grace, after quick calls too, and is audited as agent-left', async () => {
    for (let n = 0; n < 3; n++) expect((await echo()).status).toBe(200);
    await abandonAfterFirstProgress(101);
    await abandonAfterFirstProgress(102);
    // Both places wait out the cancelled calls' grace (10 s)…
    const refused = await echo();
    expect(refused.status).toBe(429);
    expect(refused.response).toMatchObject({ error: { code: -32012 } });
    // …and then come back: polled, as nothing outside the worker says when the grace ends.
    let status = refused.status;
    for (const until = Date.now() + 40_000; status === 429 && Date.now() < until; ) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      status = (await echo()).status;
    }
    expect(status).toBe(200);
    const left = worker.logs().filter((l) => l.msg === 'audit' && l.tool === 'trigger-long-running-operation');
    expect(left.map((l) => l.reason)).toEqual(['agent-left', 'agent-left']);
  }, 90_000);
});

describe('a legacy session\'s GET stream at the Workers edge', () => {
  it('is served again at once after the agent dropped it', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    const inSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    expect((await fetch(url, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).status).toBe(202);
    const get = (signal?: AbortSignal) => fetch(url, { headers: { ...inSession, accept: 'text/event-stream' }, ...(signal !== undefined ? { signal } : {}) });
    const dropped = new AbortController();
    expect((await get(dropped.signal)).status).toBe(200);
    dropped.abort();
    const again = await get();
    expect([again.status, again.headers.get('content-type')]).toEqual([200, 'text/event-stream']);
    await again.body?.cancel();
    expect((await fetch(url, { method: 'DELETE', headers: inSession })).status).toBe(200);
  }, 60_000);
});

describe('a modern /mcp list at the Workers edge', () => {
  it('ends the session it opened on a server it stopped waiting for (review of s22: no DELETE went out)', async () => {
    const listed = await modernPost(`${worker.url}/mcp`, bobToken, 'tools/list');
    expect(listed.status).toBe(200);
    // The slow server's session was opened for the list, and is ended once its late answer is given up.
    let live = slow.live.size;
    for (const until = Date.now() + 30_000; live > 0 && Date.now() < until; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      live = slow.live.size;
    }
    expect(live).toBe(0);
    expect(slow.opened()).toBe(1);
  }, 60_000);
});

describe('a legacy SDK client on a modern-only edge-direct server at the Workers edge', () => {
  it('is initialized from the server\'s server/discover, calls echo, and hears tools/list_changed through the listen its session\'s object keeps open', async () => {
    const client = await connectClient(`${worker.url}/servers/modern/mcp`, carolToken);
    const heard = new Promise<unknown>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => resolve(notification)));
    try {
      expect(client.getServerVersion()).toEqual({ name: 'modern-echo-fixture', version: '1.0.0' });
      expect((await client.callTool({ name: 'echo', arguments: { message: 'at the edge' } })).content).toEqual([{ type: 'text', text: 'Echo: at the edge' }]);
      expect((await client.callTool({ name: 'touch-tools', arguments: {} })).content).toEqual([{ type: 'text', text: expect.stringMatching(/^Notified [1-9]/) }]);
      expect(await heard).toEqual({ method: 'notifications/tools/list_changed' });
    } finally {
      await closeClient(client);
    }
  });

  it('learns the server\'s era once for the isolate: the next session\'s object sends it no initialize to be refused', async () => {
    const initializes = async () => ((await (await fetch(modernUrl.replace(/\/mcp$/, '/posts'))).json()) as Array<{ method: string }>).filter((post) => post.method === 'initialize').length;
    const session = async (message: string) => {
      const client = await connectClient(`${worker.url}/servers/modern/mcp`, carolToken);
      try {
        expect((await client.callTool({ name: 'echo', arguments: { message } })).content).toEqual([{ type: 'text', text: `Echo: ${message}` }]);
      } finally {
        await closeClient(client);
      }
    };
    await session('first'); // learns the era, by a refused initialize unless a session before it did
    const before = await initializes();
    await session('next');
    expect(await initializes()).toBe(before);
  });
});
