/**
 * `switchyard check worker.json DIR`: a worker config checked against a sidecar config dir, for
 * what neither file can know alone. For the host DIR belongs to (its sidecar.json `entity-id`):
 *
 * - the worker lists it under `hosts`, with this host's public key (from its key file);
 * - every worker server bound to it and launched there is defined in DIR's mcp.json layers
 *   (machine, user, defaults) under the same name;
 * - every agent using one of those servers names a trust profile DIR has, at its current revision;
 * - an agent that names none is not refused every call for want of one (the host's own rule,
 *   `refusedForWantOfProfile`): a server no call of the agent can ever reach is a config error;
 * - no agent's launch of a stdio server there runs under a profile whose grants contain or lie in
 *   DIR (`check-exposure.ts`: the host's own rules), which the host refuses every time
 *   (`launch-failed`): an error too, for the same reason.
 *
 * With `--runtime node` and a single-machine DIR (`isSingleMachineDir`), DIR is this machine's,
 * as `switchyard worker --runtime node` reads it: the servers bound to a top-level
 * `{"type":"local"}` are checked against it as `this-machine`, under the floor and
 * `"allow-uncontained"` of its sidecar.json if it has one; there is no host entry or key to match.
 *
 * This runs on the operator's own files, so a stale revision is shown with the current one.
 *
 * @module
 */
import { join } from 'node:path';
import { hostOf } from '../shared/descriptors.ts';
import type { ValidationIssue } from '../shared/validation.ts';
import { loadHostTrustConfig, loadSidecarConfig, osUserName, ownFiles } from '../sidecar/config/sidecar-config.ts';
import type { OwnFile } from '../sidecar/sandbox/config-dir-exposure.ts';
import { singleMachineOwnFiles } from './single-machine-own-files.ts';
import { loadHostKey } from '../sidecar/link/host-key.ts';
import { type HostTrustPolicy, refusedForWantOfProfile } from '../sidecar/trust/host-floor.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import type { WorkerConfig } from '../worker/config/worker-config.ts';
import { serversOnHost } from '../worker/link/host-expectations.ts';
import { isSingleMachineDir } from './check-config-dir.ts';
import { launchExposure } from './check-exposure.ts';
import type { CheckRuntime } from './check-file.ts';
import { type HostServers, hostServers } from './host-servers.ts';
import { LOCAL_ENTITY_ID } from './single-machine.ts';

/** The host DIR stands for, as the checks below name it and find its servers. */
interface Host {
  readonly entityId: string;
  readonly user: string;
  /** `host "laptop"`, or this machine in single-machine mode. */
  readonly who: string;
  readonly policy: HostTrustPolicy;
  /** Its own files kept outside its config dir (`ownFiles`); none in single-machine mode. */
  readonly files: readonly OwnFile[];
  /** Whether the worker config launches `name` there. */
  launches(name: string): boolean;
  /** Whether an agent's use of `name` reaches the host (an inner HTTP target too). */
  reaches(name: string): boolean;
}

/**
 * @param config The parsed worker config.
 * @param dir A sidecar config dir whose own files are valid.
 * @returns Problems of the worker config (paths into it) and of DIR's sidecar.json; `checked`
 *   false when DIR's sidecar.json could not be read, so nothing was checked across.
 */
export async function checkAcross(
  config: WorkerConfig,
  dir: string,
  runtime: CheckRuntime = 'edge',
  /** The sidecar's `--worker` / `--entity-id`, which it reads over sidecar.json's. */
  overrides: { worker?: string; entityId?: string } = {},
  /** The worker config's path: in single-machine mode, its folder's own files are kept out of sandboxes too. */
  configFile?: string,
): Promise<{ worker: ValidationIssue[]; sidecar: ValidationIssue[]; checked: boolean }> {
  if (runtime === 'node' && isSingleMachineDir(dir)) {
    const worker = await thisMachine(config, dir, configFile);
    return { worker: worker ?? [], sidecar: [], checked: worker !== null };
  }
  const worker: ValidationIssue[] = [];
  const sidecar: ValidationIssue[] = [];
  let host;
  try {
    host = loadSidecarConfig(dir, overrides);
  } catch {
    return { worker, sidecar, checked: false }; // its problems are reported by check DIR
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
  const here = serversOnHost(config, entityId);
  worker.push(
    ...(await hostChecks(config, dir, {
      entityId,
      user: host.user,
      who: `host "${entityId}"`,
      policy: { ...(host.trustFloor !== undefined ? { floor: host.trustFloor } : {}), allowUncontained: host.allowUncontained },
      files: ownFiles(host),
      launches: (name) => here.includes(name),
      reaches: (name) => {
        const executor = config.servers[name]?.executor;
        return executor !== undefined && hostOf(executor) === entityId;
      },
    })),
  );
  return { worker, sidecar, checked: true };
}

/** The single-machine dir: the worker's own `{"type":"local"}` servers, launched in its process from DIR. */
async function thisMachine(config: WorkerConfig, dir: string, configFile: string | undefined): Promise<ValidationIssue[] | null> {
  let trust;
  try {
    trust = loadHostTrustConfig(dir);
  } catch {
    return null; // reported by check DIR: nothing is checked across
  }
  const local = (name: string) => config.servers[name]?.executor.type === 'local';
  return hostChecks(config, dir, {
    entityId: LOCAL_ENTITY_ID,
    user: osUserName(),
    who: 'this machine (single-machine mode)',
    policy: { ...(trust.trustFloor !== undefined ? { floor: trust.trustFloor } : {}), allowUncontained: trust.allowUncontained },
    files: configFile === undefined ? [] : singleMachineOwnFiles(configFile, config.audit?.file !== undefined ? { auditFile: config.audit.file } : {}),
    launches: local,
    reaches: local,
  });
}

/** What a host (or this machine) must agree on with the worker config: its servers, the pins, and trust that lets each agent launch. */
async function hostChecks(config: WorkerConfig, dir: string, host: Host): Promise<ValidationIssue[]> {
  const worker: ValidationIssue[] = [];
  const { who } = host;
  const defined = hostServers(dir, host.entityId, host.user).servers;
  const here = Object.keys(config.servers).filter((name) => host.launches(name));
  for (const name of here) {
    if (!defined.has(name)) {
      worker.push({ path: `servers.${name}.executor`, message: `${who} defines no server "${name}" in ${join(dir, 'mcp-servers', 'mcp.json')} (nor its users/ or machines/ layers): add it there or fix the name` });
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
        worker.push({ path: `${path}.trust-profile-revision`, message: `${who} has trust profile "${ref}" at ${revision}: the agent would be refused (trust-profile-stale); set it to that revision` });
      }
    } catch (error) {
      worker.push({ path: `${path}.trust-profile-ref`, message: `${who} cannot use trust profile "${ref}": ${(error as Error).message}` });
    }
  }
  worker.push(...unprofiledRefusals(config, host, defined));
  worker.push(...(await exposingLaunches(config, dir, store, host, defined)));
  return worker;
}

/**
 * Each server of this host that an agent naming no trust profile may use, and that the host refuses
 * it every time. Every server reached through the host counts, an inner http target too: the host
 * decides its trust by the entry it lists for the name. One it does not list is reported above.
 */
function unprofiledRefusals(config: WorkerConfig, host: Host, defined: HostServers['servers']): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const { who } = host;
  for (const [index, agent] of config.agents.entries()) {
    if (agent['trust-context'] !== undefined) continue;
    for (const [at, name] of agent.servers.entries()) {
      const listed = defined.get(name);
      if (!host.reaches(name) || listed === undefined) continue;
      if (!refusedForWantOfProfile(host.policy, { serverFloor: listed.server.trustProfile })) continue;
      issues.push({
        path: `agents[${index}].servers[${at}]`,
        message:
          `server "${name}" on ${who} will be refused for agent "${agent.name}" (denied-by-policy): the agent names no trust profile, and the host has no trust floor and no "allow-uncontained"; ` +
          `give the agent a "trust-context", or on the host set "trust-profile" in sidecar.json (or in "${name}"'s mcp.json entry) or "allow-uncontained": true`,
      });
    }
  }
  return issues;
}

/**
 * Each stdio server of this host an agent uses whose every launch the host refuses because the
 * profile it runs under (the agent's pin under the floor, or the floor alone) grants a path that
 * contains or lies in DIR. A stale or missing pin is reported above, and not here again.
 */
async function exposingLaunches(config: WorkerConfig, dir: string, store: TrustProfileStore, host: Host, defined: HostServers['servers']): Promise<ValidationIssue[]> {
  const issues: ValidationIssue[] = [];
  for (const [index, agent] of config.agents.entries()) {
    const trust = agent['trust-context'];
    const requested = trust === undefined ? undefined : { ref: trust['trust-profile-ref'], revision: trust['trust-profile-revision'] };
    for (const [at, name] of agent.servers.entries()) {
      const listed = defined.get(name);
      if (!host.launches(name) || listed?.server.kind !== 'stdio') continue;
      const why = await launchExposure(dir, store, host.policy, { server: name, serverFloor: listed.server.trustProfile, requested }, host.entityId === LOCAL_ENTITY_ID ? 'single-machine' : 'sidecar', host.files);
      if (why === null) continue;
      issues.push({ path: `agents[${index}].servers[${at}]`, message: `server "${name}" on ${host.who} cannot start for agent "${agent.name}" (launch-failed): ${why}` });
    }
  }
  return issues;
}
