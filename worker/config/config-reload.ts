/**
 * What a changed worker config means for what is running: which agent sessions must end and which
 * host links must be dropped. Everything else keeps going (a reload applies new requests' rules
 * at once, so a session the change does not touch never notices it).
 *
 * A session ends when its agent is gone, or when the agent's credential or trust context changed
 * (the profile and revision its servers were opened under): those are about who the agent is and
 * what it runs under. A session of one server (`/servers/<name>/mcp`) also ends when its server is
 * gone, no longer allowed to the agent, or bound to another descriptor. A session that follows
 * such changes itself (`reconfigure`: a `/mcp` session, whose servers come and go as availability,
 * see `aggregate/aggregate-session.ts`) is handed the new config instead. A host's link is dropped when
 * the host is gone or its public key changed: the link proved the old key, and the sidecar dials
 * again to prove the new one.
 *
 * @module
 */
import type { WorkerConfig } from './worker-config.ts';

/** A live session as a reload weighs it. */
export interface ReloadedSession {
  readonly agent: string;
  readonly servers: readonly string[];
  /** Present when the session follows a change to its servers itself (`/mcp`): only a change to its agent ends it. */
  readonly reconfigure?: unknown;
}

/** Why a session of `agent` using `servers` must end under `next`, or null when it may go on. */
export function sessionEndReason(previous: WorkerConfig, next: WorkerConfig, session: ReloadedSession): string | null {
  const before = previous.agents.find((a) => a.name === session.agent);
  const after = next.agents.find((a) => a.name === session.agent);
  if (after === undefined) return 'agent removed';
  if (before === undefined || before['token-sha256'] !== after['token-sha256']) return 'agent token changed';
  if (JSON.stringify(before['trust-context'] ?? null) !== JSON.stringify(after['trust-context'] ?? null)) return 'agent trust context changed';
  if (session.reconfigure !== undefined) return null;
  for (const server of session.servers) {
    if (!after.servers.includes(server)) return `server "${server}" no longer allowed`;
    const was = previous.servers[server];
    const now = next.servers[server];
    if (now === undefined) return `server "${server}" removed`;
    if (was === undefined || JSON.stringify(was.executor) !== JSON.stringify(now.executor)) return `server "${server}" changed`;
  }
  return null;
}

/**
 * Why a session of one server must end under `next` because its server's host has its link
 * dropped for the change (its key changed; a host removed takes its servers' bindings with it),
 * or null. Asked beside {@link sessionEndReason}, before the links drop: the session ends for the
 * config change, counted and answered as such, not as `host-offline` once its channel is gone.
 * A `/mcp` session is not ended for it: its server turns unavailable and comes back with the link.
 */
export function hostEndReason(previous: WorkerConfig, next: WorkerConfig, session: ReloadedSession): string | null {
  if (session.reconfigure !== undefined) return null;
  const unlinked = hostsToUnlink(previous, next);
  if (unlinked.length === 0) return null;
  for (const server of session.servers) {
    const executor = next.servers[server]?.executor;
    const host = executor !== undefined && 'entity-id' in executor ? executor['entity-id'] : undefined;
    if (host !== undefined && unlinked.includes(host)) return `host "${host}" of server "${server}" has a new key`;
  }
  return null;
}

/** Hosts whose live link must be dropped under `next`: gone, or with another public key. */
export function hostsToUnlink(previous: WorkerConfig, next: WorkerConfig): string[] {
  return previous.hosts
    .filter((h) => next.hosts.find((n) => n['entity-id'] === h['entity-id'])?.['public-key'] !== h['public-key'])
    .map((h) => h['entity-id']);
}
