/**
 * A host's roster: the agents a worker routes to one host, each with the servers of that host it
 * may open (a `link-roster` frame, to a sidecar that announced `roster`, `link-features.ts`). Sent
 * when the link is accepted and again whenever a reload of the worker's config changes it.
 *
 * The host keeps things ready per agent and server: the warm pool's spares, a modern agent's
 * server instances. Before the roster, a host never learnt that an agent was removed, or lost a
 * server, and those processes sat idle for their whole idle time (the warm pool's 600 s, a modern
 * instance's 15 minutes) with no one left who could reach them. With it, the host ends them at once.
 *
 * The roster only ever ends what is idle or unreachable; it is never a permission. The host decides
 * what runs (DESIGN §5): a channel is opened or refused on the host's own files, roster or not, so a
 * worker that sent a wrong roster costs its agents cold starts and nothing else. It names agents
 * and servers the host is told on every channel open anyway, and nothing secret.
 *
 * @module
 */
import * as z from '../zod.ts';
import { AgentNameSchema, ServerNameSchema } from '../names.ts';

/** Most agents a roster names, and most servers per agent: a config beyond them is sent none (the host then keeps its idle clocks). */
export const MAX_ROSTER_AGENTS = 10_000;
export const MAX_ROSTER_SERVERS = 1_000;
/**
 * Largest roster sent, as JSON: it goes as one frame outside the channels' turns, so a larger one
 * would hold every agent's frames behind it. Names are ASCII, so characters are bytes.
 */
export const MAX_ROSTER_BYTES = 1024 * 1024;

export const hostRosterSchema = z.lazily(() =>
  z.array(z.strictObject({ agent: AgentNameSchema, servers: z.array(ServerNameSchema).check(z.maxLength(MAX_ROSTER_SERVERS)) })).check(z.maxLength(MAX_ROSTER_AGENTS)),
);

/** The agents of one host, each with the servers of that host it may open. */
export type HostRoster = z.infer<ReturnType<typeof hostRosterSchema>>;

/** Whether `roster` routes `agent`'s sessions of `server` to this host. */
export type RosterCheck = (agent: string, server: string) => boolean;

/** The check of one roster, built once so that each lookup is two map reads. */
export function rosterCheck(roster: HostRoster): RosterCheck {
  const servers = new Map(roster.map((entry) => [entry.agent, new Set(entry.servers)]));
  return (agent, server) => servers.get(agent)?.has(server) === true;
}

/** Whether a roster fits `MAX_ROSTER_AGENTS` and `MAX_ROSTER_SERVERS`, as the frame schema requires, and `MAX_ROSTER_BYTES`. */
export function rosterFits(roster: HostRoster): boolean {
  return roster.length <= MAX_ROSTER_AGENTS && roster.every((entry) => entry.servers.length <= MAX_ROSTER_SERVERS) && JSON.stringify(roster).length <= MAX_ROSTER_BYTES;
}
