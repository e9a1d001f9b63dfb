/**
 * `switchyard host add --config worker.json LINE [--dry-run] [--rekey]`: adds the host line a workstation
 * printed (`host-line.ts`) to a worker config, in one command:
 *
 * - the host's `hosts` entry (its public key), with the trust profile revisions it reported;
 * - each server it runs that the config does not define yet, bound to it;
 * - the pins of agents that use this host's servers, moved to the revisions it now reports.
 *
 * Every change is printed as a diff line (`+` added, `~` changed, `!` needs a look), so nothing
 * is pinned silently; `--dry-run` prints them and writes nothing; a new key for a known host
 * needs `--rekey`. The result is validated as the
 * worker validates it before it is written (`worker-config-file.ts`).
 *
 * @module
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalError } from '../shared/errors.ts';
import { parseConnectionDescriptor } from '../shared/descriptors.ts';
import { launchesOnHost } from '../worker/link/host-expectations.ts';
import { parseHostLine, type HostLine } from './host-line.ts';
import { openWorkerConfig, saveWorkerConfig, whenTheWorkerHasIt, type RawWorkerConfig } from './worker-config-file.ts';

interface Edit {
  raw: RawWorkerConfig;
  changes: string[];
  notes: string[];
}

function editHost(edit: Edit, line: HostLine, rekey: boolean, path: string): void {
  const id = line['entity-id'];
  const hosts = (edit.raw.hosts ??= []);
  const existing = hosts.find((h) => h['entity-id'] === id);
  const reported = line['trust-profiles'] ?? {};
  if (existing === undefined) {
    hosts.push({ 'entity-id': id, 'public-key': line['public-key'], ...(Object.keys(reported).length > 0 ? { 'trust-profiles': reported } : {}) });
    edit.changes.push(`+ host "${id}" with key ${line['public-key']}`);
    for (const [ref, revision] of Object.entries(reported)) edit.changes.push(`+ host "${id}" trust profile "${ref}" at ${revision}`);
    return;
  }
  if (existing['public-key'] !== line['public-key']) {
    // A line is pasted from elsewhere: one that names a known host with another key is someone
    // else claiming to be it until the person pasting it says it is the host's new key.
    if (!rekey) {
      throw new LocalError(
        'usage',
        `${path} has host "${id}" with another key (${String(existing['public-key'])}): this line's key is a new identity, and the old key could no longer link. ` +
          `If ${id} made a new key (its host.key was replaced), add --rekey; if not, do not add this line`,
      );
    }
    edit.changes.push(`~ host "${id}" key ${String(existing['public-key'])} → ${line['public-key']} (a new identity: the old key can no longer link)`);
    existing['public-key'] = line['public-key'];
  }
  const before = (existing['trust-profiles'] ?? {}) as Record<string, string>;
  for (const [ref, revision] of Object.entries(reported)) {
    if (!Object.hasOwn(before, ref)) edit.changes.push(`+ host "${id}" trust profile "${ref}" at ${revision}`);
    else if (before[ref] !== revision) edit.changes.push(`~ host "${id}" trust profile "${ref}" ${before[ref]} → ${revision}`);
  }
  for (const ref of Object.keys(before)) if (!Object.hasOwn(reported, ref)) edit.changes.push(`- host "${id}" trust profile "${ref}" (the host no longer has it)`);
  if (Object.keys(reported).length > 0) existing['trust-profiles'] = reported;
  else delete existing['trust-profiles'];
}

function bindsHere(entry: unknown, id: string): boolean {
  try {
    return launchesOnHost(parseConnectionDescriptor((entry as { executor?: unknown }).executor, 'executor'), id);
  } catch {
    return false;
  }
}

function editServers(edit: Edit, line: HostLine): void {
  const id = line['entity-id'];
  const offered = line.servers ?? [];
  for (const name of offered) {
    // Own keys only: `constructor` or `toString` is a server name like any other.
    const entry = Object.hasOwn(edit.raw.servers, name) ? edit.raw.servers[name] : undefined;
    if (entry === undefined) {
      edit.raw.servers[name] = { executor: { type: 'user-computer-profile', 'entity-id': id } };
      edit.changes.push(`+ server "${name}" on host "${id}"`);
    } else if (!bindsHere(entry, id)) {
      edit.notes.push(`! server "${name}" is already defined elsewhere (${JSON.stringify((entry as { executor?: unknown }).executor)}): kept as it is`);
    }
  }
  for (const [name, entry] of Object.entries(edit.raw.servers)) {
    if (bindsHere(entry, id) && !offered.includes(name)) edit.notes.push(`! server "${name}" is bound to host "${id}", which does not define it: agents get server-not-found`);
  }
}

function editPins(edit: Edit, line: HostLine): void {
  const id = line['entity-id'];
  const here = new Set(Object.entries(edit.raw.servers).filter(([, entry]) => bindsHere(entry, id)).map(([name]) => name));
  const reported = line['trust-profiles'] ?? {};
  for (const agent of edit.raw.agents) {
    const trust = agent['trust-context'] as Record<string, string> | undefined;
    const servers = Array.isArray(agent.servers) ? (agent.servers as string[]) : [];
    if (trust === undefined || !servers.some((s) => here.has(s))) continue;
    const ref = trust['trust-profile-ref'] ?? '';
    const revision = reported[ref];
    if (revision === undefined) {
      edit.notes.push(`! agent "${String(agent.name)}" names trust profile "${ref}", which host "${id}" does not have: it gets trust-profile-not-found there`);
    } else if (trust['trust-profile-revision'] !== revision) {
      edit.changes.push(`~ agent "${String(agent.name)}" trust profile "${ref}" ${trust['trust-profile-revision']} → ${revision}`);
      trust['trust-profile-revision'] = revision;
    }
  }
}

export async function runHostAddCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string' }, 'dry-run': { type: 'boolean' }, rekey: { type: 'boolean' } } });
  if (values.config === undefined || positionals.length !== 1) {
    throw new LocalError('usage', 'Usage: switchyard host add --config worker.json \'LINE\' [--dry-run] [--rekey] (the line sidecar init or sidecar host-entry printed, in single quotes)');
  }
  const line = parseHostLine(positionals[0]!);
  const file = openWorkerConfig(resolve(values.config));
  const edit: Edit = { raw: structuredClone(file.raw), changes: [], notes: [] };
  editHost(edit, line, values.rekey === true, file.path);
  editServers(edit, line);
  editPins(edit, line);
  const out: string[] = [];
  if (edit.changes.length === 0) out.push(`${file.path} already has host "${line['entity-id']}" as it reports itself: nothing to change`);
  else if (values['dry-run'] === true) out.push(`Would change ${file.path} (--dry-run: nothing written):`, ...edit.changes.map((c) => `  ${c}`));
  else {
    saveWorkerConfig(file, edit.raw);
    out.push(`${file.created ? 'Created' : 'Updated'} ${file.path}:`, ...edit.changes.map((c) => `  ${c}`));
  }
  out.push(...edit.notes.map((n) => `  ${n}`));
  if (edit.changes.length > 0 && values['dry-run'] !== true) out.push('', whenTheWorkerHasIt(file.runtime));
  process.stdout.write(out.join('\n') + '\n');
  return 0;
}
