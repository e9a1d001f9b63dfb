/**
 * The worker under the real Deno binary, with server-everything as an edge-direct HTTP server:
 * real SDK clients on both endpoints, authentication, DNS-rebinding protection, and the edge
 * refusal of HTTP servers for agents whose trust profile requires containment.
 */
import { request as httpRequest, createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { sha256Hex } from '../../worker/auth/agent-auth.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { ProcessSet, startEverythingHttp } from '../support/processes.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

const procs = new ProcessSet();
let worker: { url: string };
let guard: Server;
/** Requests that reached the HTTP server only the containment-requiring agent may use. */
let guardRequests = 0;

beforeAll(async () => {
  guard = createServer((_req, res) => {
    guardRequests++;
    res.statusCode = 500;
    res.end();
  });
  await new Promise<void>((resolve) => guard.listen(0, '127.0.0.1', resolve));
  const guardPort = (guard.address() as { port: number }).port;
  const everything = await startEverythingHttp(procs);
  worker = await startWorkerProcess(procs, {
    agents: [
      { name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['everything'] },
      {
        name: 'carol',
        'token-sha256': await sha256Hex('carol-token'),
        servers: ['everything', 'guarded'],
        'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': `sha256:${'0'.repeat(64)}`, containment: 'required' },
      },
    ],
    hosts: [],
    servers: {
      everything: { executor: { type: 'http', url: everything.url } },
      guarded: { executor: { type: 'http', url: `http://127.0.0.1:${guardPort}/mcp` } },
    },
  });
});

afterAll(async () => {
  await procs.stopAll();
  await new Promise<void>((resolve) => guard?.close(() => resolve()));
});

/** A raw request with full control of the Host header (fetch does not allow setting it). */
function rawPost(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const url = new URL(path, worker.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
  });
}

describe('worker under Deno, edge-direct HTTP server', () => {
  it('passes server-everything through /servers/everything/mcp unchanged', async () => {
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token');
    try {
      expect(client.getServerVersion()?.name).toMatch(/everything/);
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain('echo');
      expect(await client.callTool({ name: 'echo', arguments: { message: 'hello' } })).toMatchObject({ content: [{ type: 'text', text: 'Echo: hello' }] });
    } finally {
      await closeClient(client);
    }
  });

  it('round-trips sampling and elicitation through /servers/everything/mcp', async () => {
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token', { sampling: {}, elicitation: {} });
    try {
      client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
        role: 'assistant',
        model: 'test-model',
        content: { type: 'text', text: `agent saw: ${JSON.stringify(request.params.messages[0]?.content)}` },
      }));
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada Lovelace' } }));
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['trigger-sampling-request', 'trigger-elicitation-request']));
      const sampled = JSON.stringify(await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'ping', maxTokens: 5 } }));
      expect(sampled).toContain('agent saw');
      expect(sampled).toContain('test-model');
      const elicited = JSON.stringify(await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }));
      expect(elicited).toContain('Ada Lovelace');
    } finally {
      await closeClient(client);
    }
  });

  it('aggregates server-everything on /mcp under everything__<name>', async () => {
    const client = await connectClient(`${worker.url}/mcp`, 'alice-token');
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain('everything__echo');
      expect(await client.callTool({ name: 'everything__echo', arguments: { message: 'via aggregate' } })).toMatchObject({
        content: [{ type: 'text', text: 'Echo: via aggregate' }],
      });
    } finally {
      await closeClient(client);
    }
  });

  it('CreateHttpTransport_ConstrainedProfile_ReturnsUnsupportedPolicy', async () => {
    const refused = await rawPost('/servers/guarded/mcp', { authorization: 'Bearer carol-token' });
    expect(refused.status).toBe(403);
    const body = JSON.parse(refused.body) as { id: number; error: { data: { reason: string } } };
    expect(body.id).toBe(1);
    expect(body.error.data.reason).toBe('unsupported-policy');

    const client = await connectClient(`${worker.url}/mcp`, 'carol-token');
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.find((t) => t.name === 'guarded__unavailable')?.description).toContain('unsupported-policy');
      expect(tools.find((t) => t.name === 'everything__unavailable')?.description).toContain('unsupported-policy');
    } finally {
      await closeClient(client);
    }
    expect(guardRequests).toBe(0);
  });

  it('answers 401 without a token and with a wrong one', async () => {
    const none = await rawPost('/mcp', {});
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({ error: { reason: 'unauthorized' } });
    const wrong = await rawPost('/servers/everything/mcp', { authorization: 'Bearer not-a-token' });
    expect(wrong.status).toBe(401);
  });

  it('answers a foreign Host or Origin with 403', async () => {
    const host = await rawPost('/mcp', { authorization: 'Bearer alice-token', host: 'attacker.example:8787' });
    expect(host.status).toBe(403);
    expect(JSON.parse(host.body)).toMatchObject({ error: { reason: 'invalid-request' } });
    const origin = await rawPost('/mcp', { authorization: 'Bearer alice-token', origin: 'https://attacker.example' });
    expect(origin.status).toBe(403);
  });

  it('answers /healthz without a token with liveness only', async () => {
    const response = await fetch(`${worker.url}/healthz`);
    expect(await response.json()).toEqual({ ok: true });
  });
});
