/**
 * `switchyard check worker.json DIR`: a worker config checked against a sidecar config dir, for
 * what neither file can know alone. For the host DIR belongs to (its sidecar.json `entity-id`):
 *
 * - the worker lists it under `hosts`, with this host's public key (from its key file);
 * - every worker server bound to it and launched there is defined in DIR's mcp.json layers
 *   (machine, user, defaults) under the same name;
 * - every agent using one of those servers names a trust profile DIR has, at its current revision;
 * - an agent that names none is not refused every call for want of one (the host's own rule,
 *   `refusedForWantOfProfile`): a server no call of the agent can ever reach is a config error.
 *
 * This runs on the operator's own files, so a stale revision is shown with the current one.
 *
 * @module
 */
import { join } from 'node:path';
import { hostOf } from '../shared/descriptors.ts';
import type { ValidationIssue } from '../shared/validation.ts';
import { loadSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { loadHostKey } from '../sidecar/link/host-key.ts';
import { type HostTrustPolicy, refusedForWantOfProfile } from '../sidecar/trust/host-floor.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import type { WorkerConfig } from '../worker/config/worker-config.ts';
import { serversOnHost } from '../worker/link/host-expectations.ts';
import { type HostServers, hostServers } from './host-servers.ts';

/**
 * @param config The parsed worker config.
 * @param dir A sidecar config dir whose own files are valid.
 * @returns Problems of the worker config (paths into it) and of DIR's sidecar.json.
 */
export async function checkAcross(config: WorkerConfig, dir: string): Promise<{ worker: ValidationIssue[]; sidecar: ValidationIssue[] }> {
  const worker: ValidationIssue[] = [];
  const sidecar: ValidationIssue[] = [];
  let host;
  try {
    host = loadSidecarConfig(dir);
  } catch {
    return { worker, sidecar }; // reported by check DIR
  }
  const entityId = host.entityId;
  const listed = (config.hosts ?? []).find((h) => h['entity-id'] === entityId);
  if (listed === undefined) {
    sidecar.push({ path: 'entity-id', message: `the worker config has no host "${entityId}" under "hosts": add this host with the line \`sidecar host-entry\` prints on that host (switchyard host add)` });
  } else {
    try {
      const key = await loadHostKey(host.keyFile);
      if (key.publicKey !== listed['public-key']) {
        sidecar.push({ path: 'key-file', message: `this host's key is not the one the worker config lists for "${entityId}": set its "public-key" to ${key.publicKey}` });
      }
    } catch (error) {
      sidecar.push({ path: 'key-file', message: `cannot load this host's key: ${(error as Error).message}` });
    }
  }
  const defined = hostServers(dir, entityId, host.user).servers;
  const here = serversOnHost(config, entityId);
  for (const name of here) {
    if (!defined.has(name)) {
      worker.push({ path: `servers.${name}.executor`, message: `host "${entityId}" defines no server "${name}" in ${join(dir, 'mcp-servers', 'mcp.json')} (nor its users/ or machines/ layers): add it there or fix the name` });
    }
  }
  const store = new TrustProfileStore(join(dir, 'trust-profiles'));
  for (const [index, agent] of config.agents.entries()) {
    const trust = agent['trust-context'];
    if (trust === undefined || !agent.servers.some((s) => here.includes(s))) continue;
    const ref = trust['trust-profile-ref'];
    const path = `agents[${index}].trust-context`;
    try {
      const { revision } = await store.load(ref);
      if (revision !== trust['trust-profile-revision']) {
        worker.push({ path: `${path}.trust-profile-revision`, message: `host "${entityId}" has trust profile "${ref}" at ${revision}: the agent would be refused (trust-profile-stale); set it to that revision` });
      }
    } catch (error) {
      worker.push({ path: `${path}.trust-profile-ref`, message: `host "${entityId}" cannot use trust profile "${ref}": ${(error as Error).message}` });
    }
  }
  worker.push(...unprofiledRefusals(config, entityId, { ...(host.trustFloor !== undefined ? { floor: host.trustFloor } : {}), allowUncontained: host.allowUncontained }, defined));
  return { worker, sidecar };
}

/**
 * Each server of this host that an agent naming no trust profile may use, and that the host refuses
 * it every time. Every server reached through the host counts, an inner http target too: the host
 * decides its trust by the entry it lists for the name. One it does not list is reported above.
 */
function unprofiledRefusals(config: WorkerConfig, entityId: string, policy: HostTrustPolicy, defined: HostServers['servers']): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [index, agent] of config.agents.entries()) {
    if (agent['trust-context'] !== undefined) continue;
    for (const [at, name] of agent.servers.entries()) {
      const executor = config.servers[name]?.executor;
      const listed = defined.get(name);
      if (executor === undefined || hostOf(executor) !== entityId || listed === undefined) continue;
      if (!refusedForWantOfProfile(policy, { serverFloor: listed.server.trustProfile })) continue;
      issues.push({
        path: `agents[${index}].servers[${at}]`,
        message:
          `server "${name}" on host "${entityId}" will be refused for agent "${agent.name}" (denied-by-policy): the agent names no trust profile, and the host has no trust floor and no "allow-uncontained"; ` +
          `give the agent a "trust-context", or on the host set "trust-profile" in sidecar.json (or in "${name}"'s mcp.json entry) or "allow-uncontained": true`,
      });
    }
  }
  return issues;
}
