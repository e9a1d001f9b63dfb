/**
 * The Workers front's `/healthz` asks every host's Durable Object for its link only for a token
 * the report is for (review s19: any `Authorization` header did, a subrequest per host each time).
 * The namespace is a stand-in that counts what is asked of it; the rest is the front as deployed.
 */
import { describe, expect, it } from 'vitest';
import { silentWorkerLogger } from '../../log.ts';
import { WorkerAudit } from '../../audit/worker-audit.ts';
import { testConfig } from '../../../test/support/in-process-app.ts';
import { hostCredential, workerHostEntry } from '../../../test/support/configs.ts';
import { sha256Hex } from '../../../shared/credentials.ts';
import { createEdgeApp } from './edge-front.ts';
import type { SwitchyardEnv } from './workers-runtime.ts';

describe('the Workers front\'s /healthz', () => {
  it('asks the hosts\' objects only for an agent\'s or the admin\'s token', async () => {
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']);
    let asked = 0;
    const namespace = {
      idFromName: (name: string) => ({ name }),
      get: () => ({ fetch: async () => ((asked += 1), Response.json({ 'entity-id': 'laptop', linked: true, since: null, channels: 0, roundTripMs: null })) }),
    };
    const env = { HOST_LINK: namespace, AGENT_SESSION: namespace } as unknown as SwitchyardEnv;
    const app = createEdgeApp(env, config, silentWorkerLogger, new WorkerAudit({ config }));
    const health = (authorization?: string) => app.request('http://127.0.0.1:8787/healthz', authorization === undefined ? {} : { headers: { authorization } });
    for (const authorization of [undefined, 'Bearer nobody-token', 'Basic eA==', 'Bearer']) {
      await health(authorization);
    }
    expect(asked).toBe(0);
    expect((await health('Bearer alice-token')).status).toBe(200);
    expect(asked).toBe(config.hosts.length);
  });

  it('asks only the hosts of an agent\'s own servers for its report, and every host for the admin\'s (review s20)', async () => {
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], {
      alpha: { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } },
      beta: { type: 'user-computer-profile', 'entity-id': 'desktop', target: { type: 'local' } },
    }, { hosts: [workerHostEntry(hostCredential('laptop')), workerHostEntry(hostCredential('desktop'))], 'admin-token-sha256': await sha256Hex('admin-token') });
    const asked: string[] = [];
    const namespace = {
      idFromName: (name: string) => ({ name }),
      get: (id: { name: string }) => ({ fetch: async () => (asked.push(id.name), Response.json({ 'entity-id': id.name, linked: true, since: null, channels: 0, roundTripMs: null })) }),
    };
    const env = { HOST_LINK: namespace, AGENT_SESSION: namespace } as unknown as SwitchyardEnv;
    const app = createEdgeApp(env, config, silentWorkerLogger, new WorkerAudit({ config }));
    const report = await (await app.request('http://127.0.0.1:8787/healthz', { headers: { authorization: 'Bearer alice-token' } })).json() as { hosts: { 'entity-id': string }[] };
    expect([asked, report.hosts.map((h) => h['entity-id'])]).toEqual([['laptop'], ['laptop']]);
    asked.length = 0;
    const admin = await (await app.request('http://127.0.0.1:8787/healthz', { headers: { authorization: 'Bearer admin-token' } })).json() as { hosts: { 'entity-id': string }[] };
    expect([asked.sort(), admin.hosts.map((h) => h['entity-id']).sort()]).toEqual([['desktop', 'laptop'], ['desktop', 'laptop']]);
  });
});
