/**
 * What this worker's config expects of one host (`shared/link/host-expectations.ts`): the servers
 * bound to it that launch there, and the trust profiles (with the revisions they pin) of the agents
 * that use them. Computed per probe from the config, so it is never stale.
 *
 * @module
 */
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import type { HostExpectations } from '../../shared/link/host-expectations.ts';
import type { WorkerConfig } from '../config/worker-config.ts';

/** Whether a descriptor launches on host `entityId` (a local target there), rather than reaching an URL from it. */
export function launchesOnHost(executor: ConnectionDescriptor, entityId: string): boolean {
  if (executor.type !== 'user-computer-profile' && executor.type !== 'reverse-http') return false;
  return executor['entity-id'] === entityId && (executor.target === undefined || executor.target.type === 'local');
}

/** The servers `config` launches on host `entityId`, by name. */
export function serversOnHost(config: Pick<WorkerConfig, 'servers'>, entityId: string): string[] {
  return Object.entries(config.servers).filter(([, entry]) => launchesOnHost(entry.executor, entityId)).map(([name]) => name);
}

export function hostExpectations(config: Pick<WorkerConfig, 'servers' | 'agents'>, entityId: string): HostExpectations {
  const servers = serversOnHost(config, entityId);
  const profiles = new Map<string, { ref: string; revision: string; agents: string[] }>();
  for (const agent of config.agents) {
    const trust = agent['trust-context'];
    if (trust === undefined || !agent.servers.some((s) => servers.includes(s))) continue;
    const key = `${trust['trust-profile-ref']}\n${trust['trust-profile-revision']}`;
    const entry = profiles.get(key) ?? { ref: trust['trust-profile-ref'], revision: trust['trust-profile-revision'], agents: [] };
    entry.agents.push(agent.name);
    profiles.set(key, entry);
  }
  return { servers, 'trust-profiles': [...profiles.values()] };
}
