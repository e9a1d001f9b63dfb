/**
 * What a sidecar's end of the link understands beyond link protocol version 1, announced in a
 * header of its upgrade request, so that a worker of any age and a sidecar of any age work
 * together: an older worker ignores the header and sends what every sidecar reads; a worker
 * reading it uses only what the sidecar named; an older sidecar sends none, and gets version 1
 * as it always did. Every frame schema is strict, so nothing new can travel unannounced.
 *
 * - `open-first`: a `channel-open` may carry the channel's first message (`first`), where it
 *   would otherwise go in a frame of its own right behind. Under Deno every WebSocket `send` is a
 *   socket write of its own, so a modern request cost the worker two writes and the host often
 *   two reads and wake-ups, and its ack then went alone, before the answer (issue 17).
 * - `open-reply`: a `channel-open` that carries `first` may also carry `reply: true`, the worker
 *   saying it reads `channel-reply`: the ack (if it has not gone), the channel's last message and
 *   its close, in one frame. A modern request's channel carries one answer and then closes, and
 *   each frame the worker reads is a WebSocket event, a `JSON.parse` and a dispatch under Deno:
 *   three frames per answer were two more than it needs (issue 17). Only the worker can say it
 *   reads the new frame, and only the open can carry that to an older sidecar's strict schema
 *   safely, so the sidecar names the feature and the worker asks per open.
 * - `host-answers`: a `channel-open` may carry `own: true`, the worker saying it reads `own: true`
 *   on this channel's `channel-message` and `channel-reply` frames, where the host marks an answer
 *   it wrote itself, in the server's place (a refusal, above all its trust profile's
 *   `denied-by-policy`, or a failure it met), never one a server wrote: a server can put any error
 *   in its answer, but not a key in the frame around it. The worker records a host's
 *   `denied-by-policy` as the decision of the call only from a marked answer
 *   (`audit/host-answers.ts`); from a sidecar that did not announce this, whose answers it cannot
 *   tell apart, none is believed: the worker's line then says the call was passed on (`allowed`)
 *   and answered with that error, which is true whoever wrote it, and the host's own line holds
 *   its decision. Asked per open as `open-reply` is, for the same reason: a newer sidecar marks
 *   nothing for an older worker, whose strict schema would refuse the key.
 * - `paced`: both ends pace what they send, where the worker says so (`paced: true` on its
 *   `link-accepted`, which an older sidecar's strict schema would refuse, so the worker says it
 *   only to a sidecar that named the feature): each end reads a large frame in pieces
 *   (`channel-part`) and tells the other how many frames it has read (`link-ack`), so that each
 *   keeps only a window of its frames on their way and the rest in its own queues, where its
 *   channels take turns (`link-sender.ts`). Before, one agent's large answers filled the host's
 *   socket and the network path, and every other channel's frames waited behind them: over a
 *   100 Mbit/s uplink, another agent's echo on the same host took 3.5 s; an agent's large
 *   requests stood the same way before another's on the worker's side.
 * - `roster`: the worker sends a `link-roster` frame once the link is accepted, and again after
 *   each reload of its config that changes it: the agents it routes to this host and the servers
 *   each may open there (`host-roster.ts`). The host ends the spares and modern instances it
 *   keeps for anyone else, where before they sat out their idle time (up to 15 minutes) after
 *   their agent was removed. A frame of a type an older sidecar's strict schema refuses, so sent
 *   only to a sidecar that named it.
 *
 * @module
 */

/** The upgrade request header: the features this sidecar reads, comma-separated. */
export const LINK_FEATURES_HEADER = 'X-Switchyard-Link-Features';

export type LinkFeature = 'open-first' | 'open-reply' | 'host-answers' | 'paced' | 'roster';

/** What this code's sidecar end reads. */
export const LINK_FEATURES: readonly LinkFeature[] = ['open-first', 'open-reply', 'host-answers', 'paced', 'roster'];

/** The features a header value names that this code knows; an absent header names none. */
export function linkFeaturesOf(header: string | null | undefined): ReadonlySet<LinkFeature> {
  const features = new Set<LinkFeature>();
  if (header === null || header === undefined) return features;
  for (const name of header.slice(0, 200).split(',')) {
    const feature = name.trim();
    if ((LINK_FEATURES as readonly string[]).includes(feature)) features.add(feature as LinkFeature);
  }
  return features;
}
