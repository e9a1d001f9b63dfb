/**
 * Scale under workerd: a fleet of simulated hosts (the real link client, each with its own key)
 * linked to one Workers bundle at once, then a modern call to every host's server, twice round.
 * Every call must come back from the host its server is bound to: zero misrouted, zero lost.
 * 1,000 hosts is `npm run bench` (fleet), beside the same run against the Deno worker; the test
 * keeps CI quick with fewer.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { callFleet, createFleet, linkFleet, type LinkedFleet } from '../support/simulated-hosts.ts';
import { fetchHealth } from '../support/stack.ts';
import { startWorkerdWorker, type WorkerdWorker } from '../support/workerd-worker.ts';

const HOSTS = 100;

let worker: WorkerdWorker | undefined;
let linked: LinkedFleet | undefined;

afterAll(async () => {
  await linked?.stop();
  await worker?.stop();
});

describe(`${HOSTS} simulated hosts on one worker under workerd`, () => {
  it('links every host and routes every agent call to its own host: none misrouted, none lost', async () => {
    const fleet = createFleet(HOSTS);
    worker = await startWorkerdWorker(fleet.config, { logLevel: 'warn' });
    linked = await linkFleet(fleet, worker.url);
    const health = await fetchHealth(worker.url, fleet.adminToken);
    expect(health.hosts.filter((h) => h.linked)).toHaveLength(HOSTS);

    const calls = await callFleet(fleet, worker.url, { rounds: 2, concurrency: 16 });
    expect(calls.problems).toEqual([]);
    expect(calls).toMatchObject({ calls: HOSTS * 2, ok: HOSTS * 2, misrouted: 0, lost: 0 });
  }, 180_000);
});
