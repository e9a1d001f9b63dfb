/**
 * An `initialize` the agent gives up on, against the real stack (the worker under Deno, the
 * sidecar CLI, a stdio server that never answers): with the default config (no
 * `request-timeout-seconds`) each such attempt left a session busy with its initialize and a
 * server process running, for the in-flight rule's hour, and after `max-sessions-per-agent` of
 * them every new session of the agent was refused `limit-reached`. The agent cannot DELETE them:
 * an SDK client never learns an id whose initialize it did not get answered.
 *
 * Now a session ends, with its server process, once its agent's connection to the initialize is
 * gone: at once when that stream cannot be resumed (no priming event id, before 2025-11-25), or
 * when the agent has not resumed it within the grace. The open deadline that bounds an initialize
 * nobody abandons (60 s by default) is covered on the fake clock in
 * `worker/passthrough/passthrough-deadline.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { livePids } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';

const SESSION_LIMIT = 3;
const ABANDONED = 'Agent session ended: the agent left before initialize was answered';
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { hang: fixtureServer('hang-server.mjs'), pid: fixtureServer('pid-server.mjs') },
    agents: [{ name: 'carol', servers: ['hang', 'pid'] }],
    // No request-timeout-seconds: the default an agent meets.
    worker: { 'max-sessions-per-agent': SESSION_LIMIT },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const initializeBody = (protocolVersion: string) => JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'impatient', version: '1.0.0' } },
});

/** carol's initialize POST on `server`, abortable; resolves with the response once its headers came. */
const postInitialize = (server: string, protocolVersion: string, signal?: AbortSignal) => fetch(`${stack.url}/servers/${server}/mcp`, {
  method: 'POST',
  headers: { authorization: `Bearer ${stack.tokens.carol!}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
  body: initializeBody(protocolVersion),
  ...(signal !== undefined ? { signal } : {}),
});

/**
 * Opens an initialize on the hanging server and waits until the host runs its process; returns
 * the abort that gives up on it, the response (its stream still open) and that process's pid.
 */
async function hangingInitialize(protocolVersion: string): Promise<{ abort: () => void; response: Response; pid: number }> {
  const before = stack.serverPids().length;
  const controller = new AbortController();
  const response = await postInitialize('hang', protocolVersion, controller.signal);
  expect(response.status).toBe(200);
  await expect.poll(() => stack.serverPids().length, { timeout: 15_000 }).toBe(before + 1);
  return { abort: () => controller.abort(), response, pid: stack.serverPids()[before]! };
}

const pidOf = async (client: Client): Promise<number> => {
  const result = (await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> };
  return Number(result.content[0]!.text);
};

describe('an initialize the agent gives up on', () => {
  it('ends its session and its server process, so abandoned attempts never lock the agent out of new sessions', async () => {
    const attempts: Array<Awaited<ReturnType<typeof hangingInitialize>>> = [];
    for (let i = 0; i < SESSION_LIMIT; i++) attempts.push(await hangingInitialize('2025-06-18'));
    // Every session of carol's is busy with an initialize: a new one is refused, as in the report.
    expect((await stack.health()).sessions).toBe(SESSION_LIMIT);
    const refused = await postInitialize('pid', '2025-06-18');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { code: -32012, data: { reason: 'limit-reached' } } });

    // The agent gives up (its client times out and closes the connection).
    for (const attempt of attempts) attempt.abort();
    await expect.poll(async () => (await stack.health()).sessions, { timeout: 15_000 }).toBe(0);
    await expect.poll(() => livePids(attempts.map((a) => a.pid)), { timeout: 15_000 }).toEqual([]);
    await expect.poll(() => stack.worker.err.filter(msg(ABANDONED, { agent: 'carol', server: 'hang' })).length, { timeout: 15_000 }).toBe(SESSION_LIMIT);

    // And a new session opens, and works.
    const client = await connectClient(`${stack.url}/servers/pid/mcp`, stack.tokens.carol!);
    expect(await pidOf(client)).toBeGreaterThan(0);
    await closeClient(client);
  });

  it('whose stream the agent could resume (2025-11-25, a priming event id) ends once the agent has not come back for it', async () => {
    const attempt = await hangingInitialize('2025-11-25');
    const reader = attempt.response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^id: \S+/m); // the priming event: the agent holds an id it could resume from
    const ended = stack.worker.err.filter(msg(ABANDONED, { agent: 'carol' })).length;
    attempt.abort();
    await expect.poll(() => stack.worker.err.filter(msg(ABANDONED, { agent: 'carol' })).length, { timeout: 20_000 }).toBe(ended + 1);
    await expect.poll(async () => (await stack.health()).sessions, { timeout: 15_000 }).toBe(0);
    await expect.poll(() => livePids([attempt.pid]), { timeout: 15_000 }).toEqual([]);
  });
});
