/**
 * What a config reload changed, in the names the config gives things, for the audit log's `config`
 * line: which agents, hosts and servers came, went or changed, whose token or key was replaced
 * (a revocation, or a host's new key), and which other settings changed. Never a value: a token's
 * or key's hash is said to have changed, not what it is, and settings are named, not shown.
 *
 * @module
 */
import type { WorkerConfig } from './worker-config.ts';

/** Names per kind; each list holds at most `MAX_NAMES`, and `truncated` says one was cut. */
export interface NamedChanges {
  added?: string[];
  removed?: string[];
  /** Agents: a new `token-sha256`; hosts: a new `public-key`. */
  replacedCredential?: string[];
  /** Anything else of theirs, beside a replaced credential or not: an agent's servers or trust context, a host's profile revisions, a server's descriptor. */
  changed?: string[];
}

export interface ConfigChanges {
  agents?: NamedChanges;
  hosts?: NamedChanges;
  servers?: NamedChanges;
  /** The other top-level keys whose value changed (`public-url`, `admin-token-sha256`, `oauth`, …). */
  settings?: string[];
  truncated?: true;
}

/** A line is one event, whatever a reload did: a config of thousands of agents names at most this many per list. */
export const MAX_NAMES = 100;

/** The lists the worker reads as sets, by key: an agent's servers, the allowed hosts and origins. Any other list's order is kept. */
const SET_KEYS: ReadonlySet<string> = new Set(['servers', 'allowed-hosts', 'allowed-origins']);

/** Settings whose absence means a value: written out or left out, they are the same. */
const UNSET_MEANS: Readonly<Record<string, unknown>> = { 'link-on-loopback': false };

/** The same value, as the worker reads it: objects whatever their key order, and sets (`SET_KEYS`) whatever theirs. */
function same(a: unknown, b: unknown, key?: string): boolean {
  return JSON.stringify(canonical(a ?? null, key)) === JSON.stringify(canonical(b ?? null, key));
}

function canonical(value: unknown, key?: string): unknown {
  if (Array.isArray(value)) {
    const items = value.map((item) => canonical(item));
    return key !== undefined && SET_KEYS.has(key) && items.every((item) => typeof item === 'string') ? [...(items as string[])].sort() : items;
  }
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([k, v]) => [k, canonical(v, k)]));
}

export function configChanges(previous: WorkerConfig, next: WorkerConfig): ConfigChanges {
  let truncated = false;
  const capped = (names: string[]) => {
    if (names.length <= MAX_NAMES) return names;
    truncated = true;
    return names.slice(0, MAX_NAMES);
  };
  const named = <T extends object>(before: Map<string, T>, after: Map<string, T>, credential: (keyof T & string) | null): NamedChanges | undefined => {
    const out: NamedChanges = {};
    const put = (key: keyof NamedChanges, names: string[]) => {
      if (names.length > 0) out[key] = capped(names);
    };
    put('added', [...after.keys()].filter((name) => !before.has(name)));
    put('removed', [...before.keys()].filter((name) => !after.has(name)));
    const kept = [...after.keys()].filter((name) => before.has(name));
    put('replacedCredential', credential === null ? [] : kept.filter((name) => !same(before.get(name)![credential], after.get(name)![credential])));
    // The rest of each apart from its credential: a new token given with new servers is both.
    const rest = (item: T) => (credential === null ? item : { ...item, [credential]: undefined });
    put('changed', kept.filter((name) => !same(rest(before.get(name)!), rest(after.get(name)!))));
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const changes: ConfigChanges = {};
  const agents = named(new Map(previous.agents.map((a) => [a.name, a])), new Map(next.agents.map((a) => [a.name, a])), 'token-sha256');
  if (agents !== undefined) changes.agents = agents;
  const hosts = named(new Map(previous.hosts.map((h) => [h['entity-id'], h])), new Map(next.hosts.map((h) => [h['entity-id'], h])), 'public-key');
  if (hosts !== undefined) changes.hosts = hosts;
  const servers = named(new Map(Object.entries(previous.servers)), new Map(Object.entries(next.servers)), null);
  if (servers !== undefined) changes.servers = servers;
  const listed = new Set(['agents', 'hosts', 'servers']);
  const settings = [...new Set([...Object.keys(previous), ...Object.keys(next)])]
    .filter((key) => !listed.has(key) && !same(previous[key as keyof WorkerConfig] ?? UNSET_MEANS[key], next[key as keyof WorkerConfig] ?? UNSET_MEANS[key], key))
    .sort();
  if (settings.length > 0) changes.settings = settings;
  if (truncated) changes.truncated = true;
  return changes;
}
