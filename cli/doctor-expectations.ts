/**
 * The workstation doctor's comparison of what the worker expects of this host (told to the link
 * probe, `shared/link/host-expectations.ts`) with the host's own files: every server the worker
 * routes here must be defined in an `mcp.json` layer, and every trust profile its agents name must
 * exist here at the revision they pin. Each failure names the agents it refuses and the fix; a
 * stale pin's fix is the exact `host add` line to run on the worker's machine.
 *
 * A server this host runs for no agent without a trust profile (the host's own rule,
 * `refusedForWantOfProfile`) fails when none of the agents the worker routes here names one: the
 * worker tells the probe only the agents that pin a profile, so with some pinning, whether the
 * others use this server is `switchyard check worker.json DIR`'s to tell, and doctor only says so.
 *
 * A launch the host refuses because the profile it runs under grants a path that contains or lies
 * in the config dir (`check-exposure.ts`, the host's own rules) fails the same way: a pin whose
 * agents' launches of every stdio server routed here are so refused fails (of some, it is noted);
 * a server whose floor alone is so refused fails when no agent routed here names a profile (each
 * then runs under that floor alone), and is noted otherwise.
 *
 * @module
 */
import { join } from 'node:path';
import type { HostExpectations } from '../shared/link/host-expectations.ts';
import { ownFiles, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import type { ServerConfig } from '../sidecar/host/server-config.ts';
import { type HostTrustPolicy, refusedForWantOfProfile } from '../sidecar/trust/host-floor.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { launchExposure } from './check-exposure.ts';
import type { DoctorCheck } from './doctor.ts';
import { hostAddCommand, readHostLine } from './host-line.ts';
import { hostServers } from './host-servers.ts';

/** `agent "a" pins` or `agents "a", "b" pin`. */
function agentsWho(names: readonly string[], verb: string): string {
  return names.length === 1 ? `agent "${names[0]}" ${verb}s` : `agents ${names.map((n) => `"${n}"`).join(', ')} ${verb}`;
}

/** The fix of a launch refused for a grant around the config dir. */
const NARROWER = 'Grant narrower paths in the profile, or move the config dir out of the granted tree; a changed profile has a new revision, which the worker must pin (host add)';

/** A server the worker routes here: defined in a layer, and run for the agents that use it. */
async function serverCheck(
  config: SidecarConfig,
  name: string,
  listed: { readonly server: ServerConfig; readonly file: string } | undefined,
  policy: HostTrustPolicy,
  noneProfiled: boolean,
  store: TrustProfileStore,
): Promise<DoctorCheck> {
  const check = await trustCheck(config, name, listed, policy, noneProfiled);
  if (!check.ok || listed?.server.kind !== 'stdio') return check;
  // An agent that names no profile runs under the floor alone.
  const why = await launchExposure(config.configDir, store, policy, { server: name, serverFloor: listed.server.trustProfile }, 'sidecar', ownFiles(config));
  if (why === null) return check;
  if (!noneProfiled) return { ...check, detail: `${check.detail}; an agent that names no trust profile is refused it (launch-failed): ${why}` };
  return {
    name: check.name,
    ok: false,
    detail: `no agent that uses this host's servers names a trust profile, so every launch of "${name}" is refused (launch-failed): ${why}`,
    fix: `${NARROWER}, or give those agents a "trust-context" naming a narrower profile`,
  };
}

function trustCheck(config: SidecarConfig, name: string, listed: { readonly server: ServerConfig; readonly file: string } | undefined, policy: HostTrustPolicy, noneProfiled: boolean): DoctorCheck {
  const check = `worker's server "${name}"`;
  if (listed === undefined) {
    return {
      name: check,
      ok: false,
      detail: `the worker routes "${name}" to this host, but no mcp.json layer here defines it: agents get server-not-found`,
      fix: `Add "${name}" to ${join(config.configDir, 'mcp-servers', 'mcp.json')}, or bind it to the host that runs it in the worker config`,
    };
  }
  if (!refusedForWantOfProfile(policy, { serverFloor: listed.server.trustProfile })) return { name: check, ok: true, detail: `routed to this host and defined in ${listed.file}` };
  if (!noneProfiled) {
    return { name: check, ok: true, detail: `routed to this host and defined in ${listed.file}; it runs only for agents that name a trust profile: this host has no trust floor and no "allow-uncontained"` };
  }
  return {
    name: check,
    ok: false,
    detail: `the worker routes "${name}" to this host, but no agent that uses this host's servers names a trust profile, and this host has no trust floor and no "allow-uncontained": every call to it is refused (denied-by-policy)`,
    fix: `Give those agents a "trust-context" in the worker config (switchyard agent add --trust-profile REF writes one), or set "trust-profile" in ${join(config.configDir, 'sidecar.json')} (or in "${name}"'s entry in ${listed.file}), or "allow-uncontained": true`,
  };
}

/**
 * @param config This host's sidecar config.
 * @param expects What the worker said it expects; `undefined` from a worker that does not say.
 */
export async function expectationChecks(config: SidecarConfig, expects: HostExpectations | undefined): Promise<DoctorCheck[]> {
  if (expects === undefined) {
    // Its version is unknown here: it may be an old worker, or one whose runtime does not pass this on.
    return [{ name: 'what the worker expects', ok: true, detail: 'the worker accepted the probe without saying what it expects of this host: server names and pinned revisions not compared' }];
  }
  const checks: DoctorCheck[] = [];
  const defined = hostServers(config.configDir, config.entityId, config.user).servers;
  const policy = { ...(config.trustFloor !== undefined ? { floor: config.trustFloor } : {}), allowUncontained: config.allowUncontained };
  const store = new TrustProfileStore(join(config.configDir, 'trust-profiles'));
  for (const name of expects.servers) checks.push(await serverCheck(config, name, defined.get(name), policy, expects['trust-profiles'].length === 0, store));
  const launched = expects.servers.flatMap((name) => {
    const server = defined.get(name)?.server;
    return server?.kind === 'stdio' ? [{ name, serverFloor: server.trustProfile }] : [];
  });
  let line: string | undefined;
  for (const { ref, revision, agents } of expects['trust-profiles']) {
    const name = `worker's pin of trust profile "${ref}"`;
    let current: string;
    try {
      current = (await store.load(ref)).revision;
    } catch (error) {
      checks.push({
        name,
        ok: false,
        detail: `${agentsWho(agents, 'name')} it, but this host cannot use it: ${(error as Error).message}: they get trust-profile-not-found`,
        fix: `Add ${join(config.configDir, 'trust-profiles', `${ref}.json`)} (and its bases), or change the agents' "trust-profile-ref" in the worker config`,
      });
      continue;
    }
    if (current === revision) {
      const refused: Array<{ server: string; why: string }> = [];
      for (const { name: server, serverFloor } of launched) {
        const why = await launchExposure(config.configDir, store, policy, { server, serverFloor, requested: { ref, revision } }, 'sidecar', ownFiles(config));
        if (why !== null) refused.push({ server, why });
      }
      const servers = refused.map((r) => `"${r.server}"`).join(', ');
      if (refused.length === 0) checks.push({ name, ok: true, detail: `${current}, as ${agentsWho(agents, 'pin')} it` });
      // Its agents use some server routed here, not necessarily one refused: only all of them refused is certain.
      else if (refused.length < launched.length) checks.push({ name, ok: true, detail: `${current}, as ${agentsWho(agents, 'pin')} it; a launch of ${servers} under it is refused (launch-failed): ${refused[0]!.why}` });
      else checks.push({ name, ok: false, detail: `${agentsWho(agents, 'pin')} it, but a launch of ${servers} under it is refused (launch-failed): ${refused[0]!.why}`, fix: NARROWER });
      continue;
    }
    line ??= hostAddCommand((await readHostLine(config.configDir)).line);
    checks.push({
      name,
      ok: false,
      detail: `${agentsWho(agents, 'pin')} ${revision}, but this host has ${current}: they are refused (trust-profile-stale)`,
      fix: `If the profile is as it should be, pin it: on the worker's machine run ${line}`,
    });
  }
  return checks;
}
