/**
 * `switchyard agent add|remove`: agents of a worker config, with nothing copied by hand.
 *
 * `agent add NAME --servers a,b [--trust-profile REF] --config worker.json` makes a fresh bearer
 * token, writes only its sha-256 into the config, and prints the token once with paste-ready
 * client configs; the token is stored nowhere. `--trust-profile REF` pins the revision the hosts
 * of those servers reported (`host add` recorded it under their `hosts` entry); hosts that
 * disagree, or none that reported it, are an error naming the fix. `agent pin NAME` moves an
 * agent's pin to what its hosts report now (shown as a diff; `host add` does it for the agents of
 * the host it adds). `agent set NAME` changes its servers, trust profile or containment and keeps
 * its token. `agent remove NAME` takes the agent out, which revokes its token.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { sha256Hex } from '../shared/credentials.ts';
import { hostOf, parseConnectionDescriptor } from '../shared/descriptors.ts';
import { isCleartextRemote } from '../sidecar/link/worker-url.ts';
import { LocalError } from '../shared/errors.ts';
import { launchesOnHost } from '../worker/link/host-expectations.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { clientConfigs, newToken, reachableFromTheCloud } from './state-dir.ts';
import { checkAcross } from './check-across.ts';
import type { WorkerConfig } from '../worker/config/worker-config.ts';
import { openWorkerConfig, saveWorkerConfig, whenTheWorkerHasIt, type RawWorkerConfig, type WorkerConfigFile } from './worker-config-file.ts';

const USAGE = 'Usage: switchyard agent add NAME --servers a,b [--trust-profile REF [--trust-profile-revision sha256:…]] [--containment required] [--url URL] [--config-dir DIR] --config worker.json | agent set NAME [--servers a,b] [--trust-profile REF [--trust-profile-revision sha256:…]] [--containment required|none] [--dry-run] [--config-dir DIR] --config worker.json | agent pin NAME [--dry-run] [--config-dir DIR] --config worker.json | agent remove NAME --config worker.json';

/** The address agents reach when the config names none: the worker's default. */
const DEFAULT_WORKER_URL = 'http://127.0.0.1:8787';

/** The revision of `ref` that the hosts running `servers` reported, or why there is no one revision. */
export async function reportedRevision(
  file: WorkerConfigFile,
  servers: readonly string[],
  ref: string,
  /** Where `worker --runtime node` reads the trust profiles of its top-level local servers. */
  localDir: string = dirname(file.path),
  /** What to do when no host runs one of `servers`, in the words of the command that asks. */
  noHostFix = 'give its revision with --trust-profile-revision sha256:…',
): Promise<string> {
  const hosts = file.parsed.hosts.filter((host) => servers.some((s) => {
    const entry = file.parsed.servers[s];
    return entry !== undefined && launchesOnHost(parseConnectionDescriptor(entry.executor, 'executor'), host['entity-id']);
  }));
  const revisions = new Map<string, string[]>();
  for (const host of hosts) {
    const revision = host['trust-profiles']?.[ref] ?? 'none';
    revisions.set(revision, [...(revisions.get(revision) ?? []), `"${host['entity-id']}"`]);
  }
  // The single-machine mode's own servers: this machine reads the profile itself, no host reports it.
  const local = servers.some((s) => file.parsed.servers[s]?.executor.type === 'local');
  if (local) {
    const profiles = join(localDir, 'trust-profiles');
    if (!existsSync(join(profiles, `${ref}.json`))) {
      throw new LocalError('usage', `This machine (single-machine mode) has no trust profile "${ref}" in ${profiles}: add ${ref}.json there, or name the dir the mode reads with --config-dir DIR`);
    }
    const revision = (await new TrustProfileStore(profiles).load(ref)).revision;
    revisions.set(revision, [...(revisions.get(revision) ?? []), 'this machine']);
  }
  if (revisions.size === 0) {
    throw new LocalError('usage', `None of the servers ${servers.join(', ')} runs on a host, so no host reports trust profile "${ref}": ${noHostFix}`);
  }
  const missing = revisions.get('none');
  if (missing !== undefined) {
    throw new LocalError(
      'usage',
      `Host ${missing.join(', ')} reported no trust profile "${ref}": on that workstation add trust-profiles/${ref}.json, run sidecar host-entry and paste its line here (switchyard host add)`,
    );
  }
  if (revisions.size > 1) {
    const listed = [...revisions].map(([revision, ids]) => `${ids.join(', ')} at ${revision}`).join('; ');
    throw new LocalError('usage', `The hosts of these servers have trust profile "${ref}" at different revisions (${listed}): one agent pins one revision, so make the profiles the same or split the agent`);
  }
  return [...revisions.keys()][0]!;
}

/**
 * What `check --runtime node worker.json DIR` says of agent `name` on this machine's own servers
 * (single-machine mode), on stderr: a server there that refuses it (no profile and no floor), or
 * whose launches for it expose DIR. Said after the write, not instead of it: what is missing is
 * often DIR's to add next (a floor, `"allow-uncontained"`), and the token is printed only once.
 * A host's servers are the host's to judge, from its own dir (the note above, `check … DIR`).
 */
async function warnOfThisMachine(saved: WorkerConfig, file: WorkerConfigFile, localDir: string, name: string): Promise<void> {
  const index = saved.agents.findIndex((a) => a.name === name);
  if (!saved.agents[index]!.servers.some((s) => saved.servers[s]?.executor.type === 'local')) return;
  let issues;
  try {
    ({ worker: issues } = await checkAcross(saved, localDir, 'node', {}, file.path));
  } catch (error) {
    // Written already, and the token is printed next: a check that fails must not lose it.
    process.stderr.write(`warning: cannot check this machine's servers for agent "${name}" (switchyard check --runtime node ${file.path} ${localDir} says why): ${error instanceof Error ? error.message : String(error)}\n`);
    return;
  }
  const own = `agents[${index}]`;
  for (const issue of issues.filter((i) => i.path === own || i.path.startsWith(`${own}.`))) process.stderr.write(`warning: ${issue.path}: ${issue.message}\n`);
}

/** `--config-dir DIR`: the single-machine mode's dir, as `worker --runtime node` takes it (default: the config's folder). */
function localDirOf(values: Record<string, string | boolean | undefined>, file: WorkerConfigFile): string {
  return typeof values['config-dir'] === 'string' ? resolve(values['config-dir']) : dirname(file.path);
}

/** `--servers a,b` as a list; undefined when not given. */
function serversOption(values: Record<string, string | boolean | undefined>): string[] | undefined {
  return typeof values.servers === 'string' ? values.servers.split(',').map((s) => s.trim()).filter((s) => s !== '') : undefined;
}

/** Throws naming the servers of `servers` that `file` does not define, and the ones it does. */
function refuseUnknownServers(file: WorkerConfigFile, servers: readonly string[]): void {
  const unknown = servers.filter((s) => !Object.hasOwn(file.parsed.servers, s));
  if (unknown.length === 0) return;
  const known = Object.keys(file.parsed.servers);
  throw new LocalError('usage', `${file.path} defines no server ${unknown.map((s) => `"${s}"`).join(', ')} (it has ${known.length > 0 ? known.join(', ') : 'none yet: add a host first, switchyard host add; or, for one machine with no link (switchyard worker --runtime node), bind each to it under "servers" as {"executor": {"type": "local"}} (README: "One machine, no link")'})`);
}

/** The agent `name` of `file`, or a usage error naming the ones it has. */
function agentNamed(file: WorkerConfigFile, name: string): WorkerConfigFile['parsed']['agents'][number] {
  const agent = file.parsed.agents.find((a) => a.name === name);
  if (agent === undefined) throw new LocalError('usage', `${file.path} has no agent "${name}" (it has ${file.parsed.agents.map((a) => a.name).join(', ') || 'none'})`);
  return agent;
}

async function add(name: string, values: Record<string, string | boolean | undefined>, file: WorkerConfigFile): Promise<number> {
  if (file.parsed.agents.some((a) => a.name === name)) {
    throw new LocalError('usage', `${file.path} already has agent "${name}": remove it first (switchyard agent remove ${name} --config ${file.path}), which also revokes its token`);
  }
  const servers = serversOption(values) ?? [];
  if (servers.length === 0) throw new LocalError('usage', `Missing --servers a,b: the servers agent "${name}" may use\n${USAGE}`);
  refuseUnknownServers(file, servers);
  // Checked before anything is saved: a token printed only after the save must not be lost to a bad --url.
  const given = typeof values.url === 'string' ? workerOrigin(values.url) : undefined;
  const ref = typeof values['trust-profile'] === 'string' ? values['trust-profile'] : undefined;
  const pinned = typeof values['trust-profile-revision'] === 'string' ? values['trust-profile-revision'] : undefined;
  const revision = ref === undefined ? undefined : (pinned ?? (await reportedRevision(file, servers, ref, localDirOf(values, file))));
  const token = newToken();
  const agent = {
    name,
    'token-sha256': await sha256Hex(token),
    servers,
    ...(ref !== undefined ? { 'trust-context': { 'trust-profile-ref': ref, 'trust-profile-revision': revision, ...(values.containment === 'required' ? { containment: 'required' } : {}) } } : {}),
  };
  const raw: RawWorkerConfig = structuredClone(file.raw);
  raw.agents.push(agent);
  const saved = saveWorkerConfig(file, raw);
  await warnOfThisMachine(saved, file, localDirOf(values, file), name);
  // Without a profile the host decides alone, and a host with neither a floor nor allow-uncontained refuses every launch.
  const onHosts = servers.filter((s) => { const entry = file.parsed.servers[s]; return entry !== undefined && hostOf(entry.executor) !== null; });
  if (ref === undefined && onHosts.length > 0) {
    process.stderr.write(
      `note: agent "${name}" names no trust profile, so its servers on hosts (${onHosts.join(', ')}) run under each host's floor ("trust-profile" in its sidecar.json); ` +
        `a host with none (and no "allow-uncontained") refuses them with denied-by-policy: pin one with agent set ${name} --trust-profile REF\n`,
    );
  }
  const base = (given ?? saved['public-url'] ?? DEFAULT_WORKER_URL).replace(/\/+$/, '');
  if (given !== undefined && isCleartextRemote(given)) {
    process.stderr.write(`note: ${given} is plain http off this machine: the agent's token crosses the network readable; put the worker behind TLS and use its https URL\n`);
  }
  const url = `${base}/mcp`;
  const configs = clientConfigs(url, token);
  const one = (value: unknown) => `  ${JSON.stringify(value)}`;
  process.stdout.write(
    [
      `${file.created ? 'Created' : 'Updated'} ${file.path}: + agent "${name}" using ${servers.join(', ')}${ref !== undefined ? ` under trust profile "${ref}" at ${revision}` : ''}`,
      whenTheWorkerHasIt(file.runtime),
      '',
      'Its token, shown this once (the worker config keeps only its sha-256; lost, remove the agent and add it again):',
      '',
      `  ${token}`,
      '',
      `Client configs for ${url}${values.url === undefined && saved['public-url'] === undefined ? ' (the worker\'s default address; pass --url for the one agents reach)' : ''}:`,
      '',
      'Claude Code:',
      `  ${configs.claudeCode}`,
      'VS Code (.vscode/mcp.json):',
      one(configs.vscode),
      'Cursor (~/.cursor/mcp.json):',
      one(configs.cursor),
      ...(reachableFromTheCloud(url)
        ? [`Claude (claude.ai, Desktop, mobile): Settings > Connectors > Add custom connector, paste ${url}, approve with this token${saved.oauth === undefined ? ' (first add "oauth": {"built-in": {}} to the worker config: a connector signs in with OAuth)' : ''}`]
        : ['Claude Desktop (claude_desktop_config.json, through mcp-remote: a custom connector needs a public https URL):', one(configs.claudeDesktop)]),
      'Any MCP SDK client (Streamable HTTP: this URL, these headers):',
      one({ url, headers: { Authorization: `Bearer ${token}` } }),
      '',
    ].join('\n'),
  );
  return 0;
}

/** Moves an agent's pin to the revision its hosts reported, printing the change; `--dry-run` writes nothing. */
async function pin(name: string, values: Record<string, string | boolean | undefined>, file: WorkerConfigFile): Promise<number> {
  const dryRun = values['dry-run'] === true;
  const agent = agentNamed(file, name);
  const trust = agent['trust-context'];
  if (trust === undefined) throw new LocalError('usage', `Agent "${name}" names no trust profile, so there is nothing to pin: give it one with agent set ${name} --trust-profile REF`);
  const ref = trust['trust-profile-ref'];
  // pin takes what hosts report, never a revision given (agent set takes one).
  const revision = await reportedRevision(file, agent.servers, ref, localDirOf(values, file), `give its revision with agent set ${name} --trust-profile-revision sha256:…`);
  if (revision === trust['trust-profile-revision']) {
    process.stdout.write(`Agent "${name}" already pins trust profile "${ref}" at ${revision}, as its hosts report it: nothing to change\n`);
    return 0;
  }
  const change = `~ agent "${name}" trust profile "${ref}" ${trust['trust-profile-revision']} → ${revision}`;
  if (dryRun) {
    process.stdout.write(`Would change ${file.path} (--dry-run: nothing written):\n  ${change}\n`);
    return 0;
  }
  const raw: RawWorkerConfig = structuredClone(file.raw);
  const entry = raw.agents.find((a) => a.name === name)!['trust-context'] as Record<string, string>;
  entry['trust-profile-revision'] = revision;
  saveWorkerConfig(file, raw);
  process.stdout.write(`Updated ${file.path}:\n  ${change}\n${whenTheWorkerHasIt(file.runtime)}\n`);
  return 0;
}

/**
 * Changes an agent's servers, trust profile or containment, keeping its token (and so its clients'
 * configs and OAuth grants): a new server list is checked as `add` checks it, and a pinned profile
 * is pinned at the revision the hosts of the new list report, unless `--trust-profile-revision`
 * names it. Every change is printed; `--dry-run` writes nothing.
 */
async function set(name: string, values: Record<string, string | boolean | undefined>, file: WorkerConfigFile): Promise<number> {
  const agent = agentNamed(file, name);
  const listed = serversOption(values);
  if (listed !== undefined && listed.length === 0) throw new LocalError('usage', `--servers names no server: give the servers agent "${name}" may use, a,b`);
  const servers = listed ?? agent.servers;
  refuseUnknownServers(file, servers);
  const trust = agent['trust-context'];
  const givenRef = typeof values['trust-profile'] === 'string' ? values['trust-profile'] : undefined;
  const ref = givenRef ?? trust?.['trust-profile-ref'];
  if (ref === undefined && (values.containment !== undefined || values['trust-profile-revision'] !== undefined)) {
    throw new LocalError('usage', `Agent "${name}" names no trust profile: give one with --trust-profile REF`);
  }
  const givenRevision = typeof values['trust-profile-revision'] === 'string' ? values['trust-profile-revision'] : undefined;
  // The pin follows what the hosts of the servers report, as `add` and `pin` take it, when what it depends on changes.
  const revision = ref === undefined ? undefined : (givenRevision ?? (givenRef !== undefined || listed !== undefined ? await reportedRevision(file, servers, ref, localDirOf(values, file)) : trust!['trust-profile-revision']));
  const containment = values.containment === undefined ? trust?.containment : values.containment === 'required' ? 'required' : undefined;

  const changes: string[] = [];
  if (servers.join(',') !== agent.servers.join(',')) changes.push(`~ agent "${name}" servers ${agent.servers.join(', ')} → ${servers.join(', ')}`);
  if (ref !== trust?.['trust-profile-ref'] || revision !== trust?.['trust-profile-revision']) {
    const before = trust === undefined ? 'none' : `"${trust['trust-profile-ref']}" at ${trust['trust-profile-revision']}`;
    changes.push(`~ agent "${name}" trust profile ${before} → "${ref}" at ${revision}`);
  }
  if (ref !== undefined && (containment ?? 'none') !== (trust?.containment ?? 'none')) changes.push(`~ agent "${name}" containment ${trust?.containment ?? 'none'} → ${containment ?? 'none'}`);
  if (changes.length === 0) {
    process.stdout.write(`Agent "${name}" is already so: nothing to change\n`);
    return 0;
  }
  if (values['dry-run'] === true) {
    process.stdout.write(`Would change ${file.path} (--dry-run: nothing written):\n${changes.map((c) => `  ${c}`).join('\n')}\n`);
    return 0;
  }
  const raw: RawWorkerConfig = structuredClone(file.raw);
  const entry = raw.agents.find((a) => a.name === name)!;
  entry.servers = servers;
  if (ref !== undefined) entry['trust-context'] = { 'trust-profile-ref': ref, 'trust-profile-revision': revision, ...(containment !== undefined ? { containment } : {}) };
  const saved = saveWorkerConfig(file, raw);
  await warnOfThisMachine(saved, file, localDirOf(values, file), name);
  process.stdout.write(
    `Updated ${file.path} (the agent's token is unchanged; once the worker has the new config, its sessions using a server it lost${changes.some((c) => c.includes('trust profile') || c.includes('containment')) ? ', and all of them, since its trust context changed,' : ''} end):\n${changes.map((c) => `  ${c}`).join('\n')}\n${whenTheWorkerHasIt(file.runtime)}\n`,
  );
  return 0;
}

function remove(name: string, file: WorkerConfigFile): number {
  agentNamed(file, name);
  const raw: RawWorkerConfig = structuredClone(file.raw);
  raw.agents = raw.agents.filter((a) => a.name !== name);
  saveWorkerConfig(file, raw);
  process.stdout.write(`Updated ${file.path}: - agent "${name}" (its token no longer works once the worker has the new config)\n${whenTheWorkerHasIt(file.runtime)}\n`);
  return 0;
}

export async function runAgentCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      servers: { type: 'string' },
      'trust-profile': { type: 'string' },
      'trust-profile-revision': { type: 'string' },
      containment: { type: 'string' },
      url: { type: 'string' },
      'dry-run': { type: 'boolean' },
      'config-dir': { type: 'string' },
    },
  });
  const [action, name, ...extra] = positionals;
  if ((action !== 'add' && action !== 'set' && action !== 'remove' && action !== 'pin') || name === undefined || extra.length > 0) throw new LocalError('usage', USAGE);
  if (values.config === undefined) throw new LocalError('usage', `Missing --config FILE: the worker config to ${action === 'add' ? 'add the agent to' : action === 'remove' ? 'remove the agent from' : 'change the agent in'}\n${USAGE}`);
  if (values.containment !== undefined && values.containment !== 'required' && values.containment !== 'none') throw new LocalError('usage', `--containment must be required or none, not "${values.containment}"`);
  const file = openWorkerConfig(resolve(values.config));
  if (action === 'pin') return pin(name, values, file);
  if (action === 'set') return set(name, values, file);
  return action === 'add' ? add(name, values, file) : remove(name, file);
}

/**
 * `--url`: the worker's origin, which agents reach (`/mcp` is added). The agent URL itself, ending
 * in `/mcp`, is taken too, as the one a user was given; any other path is refused, since the worker
 * serves everything from its root.
 */
function workerOrigin(value: string): string {
  const wrong = (problem: string) => new LocalError('usage', `Invalid --url "${value}": ${problem}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw wrong('expected the worker\'s http(s) URL agents reach, e.g. https://yard.example.com');
  }
  if (!/^https?:$/.test(url.protocol)) throw wrong('expected the worker\'s http(s) URL agents reach, e.g. https://yard.example.com');
  if (url.username !== '' || url.password !== '') throw wrong('must not carry a user name or password');
  if (!/^\/(mcp\/?)?$/.test(url.pathname) || url.search !== '' || url.hash !== '') throw wrong(`must be the worker's origin (${url.origin}), which serves /mcp from its root`);
  return url.origin;
}
