/**
 * A modern call its agent abandons, at the Workers edge, to an edge-direct HTTP server (real
 * server-everything): the agent's place under `max-requests-per-agent` comes back after the
 * cancelled call's grace, and the call is audited as `agent-left`, however many quick calls came
 * before. Under workerd a timer ends with the request that set it: one timer shared by every
 * request stopped for good once a quick call that armed it had ended, and the work after an
 * abandoned call's response (its grace, its channel's close) was cut with the request
 * (review s22: after two abandoned calls the agent got 429 until the isolate was recycled).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentEntry, randomCredential } from '../support/configs.ts';
import { ProcessSet, startEverythingHttp } from '../support/processes.ts';
import { startWorkerdWorker, type WorkerdWorker } from '../support/workerd-worker.ts';
import { MODERN, modernMeta, modernPost } from '../modern/modern-client.ts';

const procs = new ProcessSet();
const token = randomCredential('alice');
let worker: WorkerdWorker;
let url: string;

beforeAll(async () => {
  const everything = await startEverythingHttp(procs);
  worker = await startWorkerdWorker({
    agents: [agentEntry({ name: 'alice', token, servers: ['everything'] })],
    servers: { everything: { executor: { type: 'http', url: everything.url } } },
    'max-requests-per-agent': 2,
  });
  url = `${worker.url}/servers/everything/mcp`;
}, 120_000);

afterAll(async () => {
  await worker?.stop();
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
