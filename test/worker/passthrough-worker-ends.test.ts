/**
 * A `/servers/<name>/mcp` session (and a `/mcp` one) the worker itself ends, against the real stack (the worker
 * under Deno, the sidecar CLI, the fault fixture's long `slow` call): every request still in
 * flight is answered with why (`config-changed`, `shutdown`), never left as a stream that ends
 * with no answer and no event to resume from; and a host re-keyed by a reload ends its servers'
 * sessions for the config change, counted in `endedSessions`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostCredential } from '../support/configs.ts';
import { msg } from '../support/line-log.ts';
import { rawAgent } from '../support/long-call.ts';
import { fixtureServer } from '../support/paths.ts';
import { HOST_A, startStack, type Stack } from '../support/stack.ts';

let stack: Stack;
/** The worker config as the stack wrote it, before a test edits it. */
let original: string;

beforeAll(async () => {
  stack = await startStack({ servers: { faults: fixtureServer('fault-server.mjs') }, agents: [{ name: 'bob', servers: ['faults'] }] });
  original = readFileSync(stack.worker.configFile, 'utf8');
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

const bob = () => rawAgent(`${stack.url}/servers/faults/mcp`, stack.tokens.bob!);

const audits = (event: string) => stack.worker.err.filter((l) => l.json.msg === 'audit' && l.json.event === event).map((l) => l.json);

/** Writes the worker config; resolves with the reload's log line once it is in force. */
async function reload(config: string): Promise<Record<string, unknown>> {
  const before = stack.worker.err.filter(msg('Worker config reloaded')).length;
  writeFileSync(stack.worker.configFile, config);
  await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(before + 1);
  return stack.worker.err.filter(msg('Worker config reloaded')).at(-1)!.json;
}

// Each test starts from the stack's own config, its host linked, whatever the one before did.
afterEach(async () => {
  if (stack.worker.process.child.exitCode !== null || readFileSync(stack.worker.configFile, 'utf8') === original) return;
  await reload(original);
  await stack.waitLinked();
});

describe('a passthrough session the worker ends', () => {
  it('answers a call in flight with config-changed when a reload takes the server from the agent', async () => {
    const agent = bob();
    const call = await agent.longCall(await agent.open());

    const config = JSON.parse(original) as { agents: Array<{ name: string; servers: string[] }> };
    config.agents.find((a) => a.name === 'bob')!.servers = [];
    expect(await reload(JSON.stringify(config))).toMatchObject({ endedSessions: 1 });

    const last = (await call.rest()).at(-1);
    expect(last).toMatchObject({ id: 7, error: { code: -32013, data: { reason: 'config-changed', server: 'faults' } } });
    await expect.poll(() => audits('call').filter((l) => l.agent === 'bob' && l.tool === 'slow'), { timeout: 15_000 })
      .toEqual([expect.objectContaining({ outcome: 'error', reason: 'config-changed' })]);
  });

  it('ends the sessions on a host re-keyed by a reload for the change, and counts them', async () => {
    const agent = bob();
    const session = await agent.open();
    const echo = await agent.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'up' } } }, session);
    expect(await echo.text()).toContain('Echo: up');

    const config = JSON.parse(original) as { hosts: Array<{ 'entity-id': string; 'public-key': string }> };
    config.hosts.find((h) => h['entity-id'] === HOST_A)!['public-key'] = hostCredential(HOST_A).publicKey;
    expect(await reload(JSON.stringify(config))).toMatchObject({ endedSessions: 1 });
    expect(audits('config').at(-1)).toMatchObject({ endedSessions: 1, changes: { hosts: { replacedCredential: [HOST_A] } } });
    await expect.poll(() => audits('session').filter((l) => l.session === session && l.ended !== undefined), { timeout: 15_000 })
      .toEqual([expect.objectContaining({ ended: 'config-changed' })]);
    const after = await agent.post({ jsonrpc: '2.0', id: 2, method: 'ping' }, session);
    expect(after.status).toBe(404);
    expect(JSON.parse(await after.text())).toMatchObject({ error: { data: { endedBecause: 'config-changed' } } });
  });

  it('on /mcp too: answers a call in flight with config-changed when a reload removes its agent, where its stream ended with no answer', async () => {
    const agent = rawAgent(`${stack.url}/mcp`, stack.tokens.bob!);
    const call = await agent.longCall(await agent.open(), 'faults__slow');

    const config = JSON.parse(original) as { agents: Array<{ name: string }> };
    config.agents = config.agents.filter((a) => a.name !== 'bob');
    expect(await reload(JSON.stringify(config))).toMatchObject({ endedSessions: 1 });

    const last = (await call.rest()).at(-1);
    expect(last).toMatchObject({ id: 7, error: { code: -32013, data: { reason: 'config-changed' } } });
  });

  it('answers a call in flight with shutdown when the worker stops (SIGTERM)', async () => {
    const agent = bob();
    const call = await agent.longCall(await agent.open());
    stack.worker.process.child.kill('SIGTERM');

    const last = (await call.rest()).at(-1);
    expect(last).toMatchObject({ id: 7, error: { code: -32014, data: { reason: 'shutdown' } } });
    expect(await stack.worker.process.exited).toBe(0);
    expect(audits('call').filter((l) => l.agent === 'bob' && l.tool === 'slow').at(-1)).toMatchObject({ outcome: 'error', reason: 'shutdown' });
  });
});
