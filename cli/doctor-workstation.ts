/**
 * The workstation's doctor (`switchyard doctor --config-dir DIR`): everything the sidecar will need
 * from DIR, checked the way the sidecar itself uses it, each failure with what to do:
 *
 * - `sidecar.json` parses (the report `switchyard check` prints);
 * - the host key loads;
 * - the worker accepts this host over the real link handshake (`doctor-link.ts`): reachable, the
 *   entity id and the key known to it;
 * - every trust profile in `trust-profiles/` resolves with its bases, and the floor exists; a floor
 *   whose grants contain or lie in DIR is noted on its line (an agent naming no profile runs under
 *   it alone and is refused; whether one does is the worker's to tell, below);
 * - every configured stdio server's command is found, as the sidecar's resolver finds it.
 *
 * - what the worker expects of this host, as it tells the probe (`doctor-expectations.ts`): every
 *   server it routes here defined, every trust profile its agents name here at the pinned revision;
 * - with `launch` (`doctor --launch`), each server started as the sidecar starts it, under each
 *   profile it runs under, answering `initialize` (`doctor-launch.ts`).
 *
 * @module
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { ownFiles, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import type { HostExpectations } from '../shared/link/host-expectations.ts';
import { loadHostKey, type HostKey } from '../sidecar/link/host-key.ts';
import { resolveStdioCommand } from '../sidecar/process/stdio-command-resolver.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { systemExposureReason, systemPathsHere } from '../sidecar/sandbox/index.ts';
import { floorExposure } from './check-exposure.ts';
import type { DoctorCheck } from './doctor.ts';
import { LocalError } from '../shared/errors.ts';
import { expectationChecks } from './doctor-expectations.ts';
import { launchChecks, type LaunchOptions } from './doctor-launch.ts';
import { probeLink } from './doctor-link.ts';
import { hostServers } from './host-servers.ts';
import { unreadable } from './config-file-read.ts';
import type { FileReadProblem } from '../shared/file-read-problem.ts';
import { initCommand, readSidecarConfig, unreadableSidecarConfig } from './sidecar-config-file.ts';
import { FULL_CLI, shellWord, type Program } from './program.ts';

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Where the worker URL doctor probes came from, for the fixes that name it. */
function workerSource(dir: string, worker: string | undefined): string {
  return worker === undefined ? `"worker" in ${join(dir, 'sidecar.json')}` : '--worker';
}

function linkCheck(config: SidecarConfig, probe: Awaited<ReturnType<typeof probeLink>>, dir: string, worker: string | undefined): DoctorCheck {
  const name = 'link to the worker';
  if (probe.ok) return { name, ok: true, detail: `${probe.url} accepted host "${config.entityId}" and its key` };
  if (probe.problem === 'unreachable') {
    return {
      name,
      ok: false,
      detail: `cannot reach the worker at ${probe.url}: ${probe.message}`,
      fix: `Check that the worker runs and listens at ${config.worker} (${workerSource(dir, worker)}) and that this machine reaches it (address, port, firewall, TLS)`,
    };
  }
  return { name, ok: false, detail: `the worker at ${probe.url} refused host "${config.entityId}": ${probe.message}`, fix: 'Do what the worker says above, then run doctor again' };
}

/**
 * What to do about a file whose problems the detail lists: `check` lists every problem of the dir
 * with the full bin; the workstation's sidecar.js has no check, and the detail says it all.
 */
function fixFile(program: Program, dir: string, file: string): string {
  return program.check ? `Fix it: ${program.run} check ${dir} lists every problem` : `Fix ${file}: its problems are listed above`;
}

function commandChecks(config: SidecarConfig, program: Program): DoctorCheck[] {
  const { servers, problems } = hostServers(config.configDir, config.entityId, config.user);
  const checks: DoctorCheck[] = problems.map(({ file, message }) => ({ name: `servers in ${file}`, ok: false, detail: message, fix: fixFile(program, config.configDir, file) }));
  for (const [name, { server, file }] of servers) {
    if (server.kind !== 'stdio') continue;
    try {
      const resolved = resolveStdioCommand(server.command, server.args, { platform: process.platform, env: process.env, cwd: server.cwd ?? config.configDir, isFile });
      checks.push({ name: `server "${name}"`, ok: true, detail: `command "${server.command}" is ${resolved.file}` });
    } catch (error) {
      checks.push({
        name: `server "${name}"`,
        ok: false,
        detail: `command "${server.command}" not found: ${(error as Error).message}`,
        fix: `Install it on this machine, or set "command" of "${name}" in ${file} to its absolute path`,
      });
    }
  }
  if (servers.size === 0 && problems.length === 0) {
    checks.push({ name: 'servers', ok: false, detail: `no server configured for this host in ${join(config.configDir, 'mcp-servers', 'mcp.json')} (nor its users/ or machines/ layers)`, fix: 'Add the servers this host runs to mcp-servers/mcp.json' });
  }
  return checks;
}

async function profileChecks(config: SidecarConfig, program: Program): Promise<DoctorCheck[]> {
  const store = new TrustProfileStore(join(config.configDir, 'trust-profiles'));
  const checks: DoctorCheck[] = [];
  const floor = config.trustFloor;
  for (const entry of await store.list()) {
    const exposure = !('error' in entry) && entry.ref === floor ? await floorExposure(config.configDir, store, entry.ref, 'sidecar', ownFiles(config)) : null;
    checks.push(
      'error' in entry
        ? { name: `trust profile "${entry.ref}"`, ok: false, detail: entry.error, fix: fixFile(program, config.configDir, join(store.dir, `${entry.ref}.json`)) }
        : { name: `trust profile "${entry.ref}"`, ok: true, detail: exposure === null ? entry.revision : `${entry.revision}; this host's floor: it ${exposure}` },
    );
  }
  if (floor !== undefined && !checks.some((c) => c.name === `trust profile "${floor}"`)) {
    checks.push({
      name: `trust profile "${floor}"`,
      ok: false,
      detail: `sidecar.json names it as this host's floor, but trust-profiles/${floor}.json does not exist: every launch would be refused`,
      fix: `Add trust-profiles/${floor}.json, or fix "trust-profile" in ${join(config.configDir, 'sidecar.json')}`,
    });
  }
  return checks;
}

/** What to do about a sidecar.json that cannot be read. */
const UNREADABLE_FIX: Record<FileReadProblem, (dir: string, program: Program) => string> = {
  'not found': (dir, program) => `Set up this workstation: ${initCommand(dir, program)}`,
  'not a file': (dir, program) => `Move what is at ${join(dir, 'sidecar.json')} aside, then set up this workstation: ${initCommand(dir, program)}`,
  'not readable': (dir) => `Run doctor as the user the sidecar runs as, or let that user read ${join(dir, 'sidecar.json')} (its owner and mode)`,
};

/** The failed host-key check: what is wrong with the key, and the fix that keeps the host's identity where one can. */
function hostKeyProblem(config: SidecarConfig, dir: string, program: Program, error: unknown): DoctorCheck {
  const file = config.keyFile;
  const init = `${program.run} sidecar init --config-dir ${shellWord(dir)} --worker ${shellWord(config.worker)} --entity-id ${shellWord(config.entityId)}`;
  const unusable = unreadable(file);
  if (unusable === 'not found') return { name: 'host key', ok: false, detail: `${file}: not found`, fix: `Run ${init} to write one, then run the host add line it prints on the worker's machine` };
  if (unusable === 'not readable') return { name: 'host key', ok: false, detail: `${file}: not readable`, fix: 'Run doctor as the user the sidecar runs as (the key is mode 0600)' };
  const detail = (error as Error).message;
  if (error instanceof LocalError && error.code === 'host-key-exposed') return { name: 'host key', ok: false, detail, fix: `Run chmod 600 ${shellWord(file)}: the key stays the host's identity` };
  // init never overwrites a key: a new one is a new identity, which the worker must learn.
  return { name: 'host key', ok: false, detail, fix: `To make a new identity, move ${file} aside, run ${init} and run the host add line it prints on the worker's machine` };
}

/**
 * @param dir The sidecar config dir.
 * @param options `worker`: the worker to probe instead of sidecar.json's, as `switchyard sidecar
 *   --worker` dials it instead (a new deployment, before sidecar.json names it); `launch`: start
 *   the servers too (it starts processes, so only when asked), with its deadlines.
 * @returns The checks, in order; a failure early on (an unusable sidecar.json) ends the list.
 */
export async function runWorkstationDoctor(dir: string, options: { linkTimeoutMs?: number; program?: Program; worker?: string; launch?: boolean | LaunchOptions } = {}): Promise<DoctorCheck[]> {
  const program = options.program ?? FULL_CLI;
  const file = join(dir, 'sidecar.json');
  const overrides = options.worker === undefined ? {} : { worker: options.worker };
  const why = unreadableSidecarConfig(dir, overrides);
  if (why !== undefined) return [{ name: 'sidecar.json', ok: false, detail: `${file}: ${why}`, fix: UNREADABLE_FIX[why](dir, program) }];
  let config: SidecarConfig;
  try {
    config = readSidecarConfig(dir, overrides, program);
  } catch (error) {
    return [{ name: 'sidecar.json', ok: false, detail: (error as Error).message, fix: fixFile(program, dir, file) }];
  }
  const given = options.worker === undefined ? '' : ' (--worker)';
  const checks: DoctorCheck[] = [{ name: 'sidecar.json', ok: true, detail: `worker ${config.worker}${given}, entity "${config.entityId}"` }];
  let key: HostKey | undefined;
  let expects: HostExpectations | undefined;
  try {
    key = await loadHostKey(config.keyFile);
    checks.push({ name: 'host key', ok: true, detail: `${config.keyFile}: ${key.publicKey}` });
  } catch (error) {
    checks.push(hostKeyProblem(config, dir, program, error));
  }
  const shown = systemExposureReason(config.configDir, ownFiles(config), systemPathsHere());
  if (shown !== null) checks.push({ name: 'contained launches', ok: false, detail: shown, fix: 'Keep the config dir, key-file and audit.file out of /usr, /bin, /sbin, /lib* and the parts of /etc a sandbox shows' });
  if (key !== undefined) {
    const probe = await probeLink({ worker: config.worker, entityId: config.entityId, key, ...(options.linkTimeoutMs !== undefined ? { timeoutMs: options.linkTimeoutMs } : {}) });
    checks.push(linkCheck(config, probe, dir, options.worker));
    if (probe.ok) checks.push(...(await expectationChecks(config, probe.expects)));
    if (probe.ok) expects = probe.expects;
  }
  checks.push(...(await profileChecks(config, program)), ...commandChecks(config, program));
  if (options.launch !== undefined && options.launch !== false) checks.push(...(await launchChecks(config, expects, options.launch === true ? {} : options.launch)));
  return checks;
}
