/**
 * The workstation doctor's comparison of what the worker expects of this host (told to the link
 * probe, `shared/link/host-expectations.ts`) with the host's own files: every server the worker
 * routes here must be defined in an `mcp.json` layer, and every trust profile its agents name must
 * exist here at the revision they pin. Each failure names the agents it refuses and the fix; a
 * stale pin's fix is the exact `host add` line to run on the worker's machine.
 *
 * @module
 */
import { join } from 'node:path';
import type { HostExpectations } from '../shared/link/host-expectations.ts';
import type { SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import type { DoctorCheck } from './doctor.ts';
import { hostAddCommand, readHostLine } from './host-line.ts';
import { hostServers } from './host-servers.ts';

/** `agent "a" pins` or `agents "a", "b" pin`. */
function agentsWho(names: readonly string[], verb: string): string {
  return names.length === 1 ? `agent "${names[0]}" ${verb}s` : `agents ${names.map((n) => `"${n}"`).join(', ')} ${verb}`;
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
  const mcpJson = join(config.configDir, 'mcp-servers', 'mcp.json');
  const defined = hostServers(config.configDir, config.entityId, config.user).servers;
  for (const name of expects.servers) {
    checks.push(
      defined.has(name)
        ? { name: `worker's server "${name}"`, ok: true, detail: `routed to this host and defined in ${defined.get(name)?.file}` }
        : {
            name: `worker's server "${name}"`,
            ok: false,
            detail: `the worker routes "${name}" to this host, but no mcp.json layer here defines it: agents get server-not-found`,
            fix: `Add "${name}" to ${mcpJson}, or bind it to the host that runs it in the worker config`,
          },
    );
  }
  const store = new TrustProfileStore(join(config.configDir, 'trust-profiles'));
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
      checks.push({ name, ok: true, detail: `${current}, as ${agentsWho(agents, 'pin')} it` });
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
