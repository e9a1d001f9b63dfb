/**
 * An agent's refusal for a server it may not use names no host (review s19): the refusal is the
 * same as for a name no server has, and the agent's own `/healthz` lists its recent calls.
 */
import { expect, it } from 'vitest';
import { hostCredential, workerHostEntry } from '../../test/support/configs.ts';
import { BASE, startInProcessApp, testConfig } from '../../test/support/in-process-app.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { createTestMcpServer } from '../../test/support/test-mcp-server.ts';
import { parseWorkerConfig } from '../config/worker-config.ts';

it("tells an agent's /healthz nothing of where another agent's server runs", async () => {
  const base = await testConfig([{ name: 'alice', servers: ['alpha'] }, { name: 'bob', servers: ['alpha'] }], ['alpha']);
  const raw = JSON.parse(JSON.stringify(base)) as Record<string, any>;
  raw.hosts.push(workerHostEntry(hostCredential('bobs-box')));
  raw.agents[1].servers = ['secret'];
  raw.servers.secret = { executor: { type: 'user-computer-profile', 'entity-id': 'bobs-box', target: { type: 'local' } } };
  const app = startInProcessApp(parseWorkerConfig(raw, { runtime: 'edge' }), new InProcessRouter({ alpha: createTestMcpServer }));
  try {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const statuses: number[] = [];
    for (const name of ['secret', 'nosuch']) {
      const response = await app.fetch(`${BASE}/servers/${name}/mcp`, { method: 'POST', headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(init) });
      statuses.push(response.status);
      await response.text();
    }
    expect(statuses).toEqual([404, 404]);
    const health = (await (await app.fetch(`${BASE}/healthz`, { headers: { authorization: 'Bearer alice-token' } })).json()) as { recentCalls: Array<{ server: string; host: string | null }> };
    expect(health.recentCalls.map((c) => [c.server, c.host])).toEqual(expect.arrayContaining([['secret', null], ['nosuch', null]]));
  } finally {
    await app.close();
  }
});
