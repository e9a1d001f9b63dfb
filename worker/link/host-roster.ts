/**
 * What this worker's config routes to one host (`shared/link/host-roster.ts`): every agent that
 * may use a server bound to it, with those servers, whether the host launches them or reaches
 * them over HTTP. Computed from the config in force each time it is sent, so it is never stale.
 *
 * @module
 */
import { hostOf } from '../../shared/descriptors.ts';
import type { HostRoster } from '../../shared/link/host-roster.ts';
import type { WorkerConfig } from '../config/worker-config.ts';

/** The host whose roster is asked for: a linked host by entity id, or the single-machine mode's own (`local`). */
export type RosterHost = { entityId: string } | 'local';

export function hostRoster(config: Pick<WorkerConfig, 'servers' | 'agents'>, host: RosterHost): HostRoster {
  const bound = new Set(
    Object.entries(config.servers)
      .filter(([, entry]) => (host === 'local' ? entry.executor.type === 'local' : hostOf(entry.executor) === host.entityId))
      .map(([name]) => name),
  );
  const roster: HostRoster = [];
  for (const agent of config.agents) {
    const servers = [...new Set(agent.servers.filter((server) => bound.has(server)))];
    if (servers.length > 0) roster.push({ agent: agent.name, servers });
  }
  return roster;
}
