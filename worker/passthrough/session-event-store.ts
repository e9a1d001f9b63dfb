/**
 * A bounded, in-memory SSE event store for one agent session, so a client whose stream dropped
 * can resume with `Last-Event-ID` and miss nothing, as it could against the server itself.
 *
 * Bounded in bytes as well as in events (review dos.md, finding 1): counted in events only, one
 * agent echoing 1 MB messages made the worker hold about 1 GB per session, and an agent may hold
 * `max-sessions-per-agent` sessions. So the store keeps at most `budgetBytes` of event text
 * (oldest events go first), and never keeps an event larger than `maxEventBytes`: the agent still
 * receives it live, it just cannot have it replayed. A stream that ended with every event handed
 * to the agent is forgotten by the endpoint (`forgetStream`), so finished calls do not push out
 * the events of calls still running.
 *
 * Event ids are `<stream>_<sequence>`, the sequence counting every event of the session. A resume
 * from an id whose event is gone (evicted, never kept, or forgotten) still names its stream and
 * its place in it, so it replays what that stream still has after that place: nothing when it
 * has nothing, never an error and never another stream's events (MCP 2025-11-25, transports,
 * "Resumability and Redelivery").
 *
 * Session state lives behind the session table (DESIGN §8), so this store goes with its session,
 * and is synchronous (`LegacyEventStore`).
 *
 * @module
 */
import type { LegacyEventStore } from '../sessions/legacy-http-endpoint.ts';

/** What one session may keep for replay: sixteen sessions of one agent stay within 64 MiB. */
export const EVENT_STORE_BUDGET_BYTES = 4 * 1024 * 1024;
/** An event larger than this is sent but not kept: a few of them would fill the budget. */
export const MAX_STORED_EVENT_BYTES = 256 * 1024;
/** A cap on entries too, for many tiny events whose bookkeeping outweighs their text. */
export const MAX_STORED_EVENTS = 512;

export interface SessionEventStoreOptions {
  budgetBytes?: number;
  maxEventBytes?: number;
  maxEvents?: number;
}

interface StoredEvent {
  readonly streamId: string;
  readonly seq: number;
  /** The event's `data`, as written on the stream. */
  readonly text: string;
}

export class SessionEventStore implements LegacyEventStore {
  /** Every kept event by sequence; Maps iterate in insertion order, so the first is the oldest. */
  readonly #events = new Map<number, StoredEvent>();
  /** The kept events of each stream, oldest first. */
  readonly #streams = new Map<string, StoredEvent[]>();
  readonly #budgetBytes: number;
  readonly #maxEventBytes: number;
  readonly #maxEvents: number;
  #bytes = 0;
  #seq = 0;

  constructor(options: SessionEventStoreOptions = {}) {
    this.#budgetBytes = options.budgetBytes ?? EVENT_STORE_BUDGET_BYTES;
    this.#maxEventBytes = Math.min(options.maxEventBytes ?? MAX_STORED_EVENT_BYTES, this.#budgetBytes);
    this.#maxEvents = options.maxEvents ?? MAX_STORED_EVENTS;
  }

  get size(): number {
    return this.#events.size;
  }

  /** The text kept, in UTF-16 code units (one byte each for the ASCII JSON mostly is). */
  get bytes(): number {
    return this.#bytes;
  }

  storeEvent(streamId: string, text: string): string {
    const seq = ++this.#seq;
    const eventId = `${streamId}_${seq}`;
    // A priming event (no data) has nothing to replay: its id alone places a resume.
    if (text.length === 0 || text.length > this.#maxEventBytes) return eventId;
    const event: StoredEvent = { streamId, seq, text };
    this.#events.set(seq, event);
    const kept = this.#streams.get(streamId);
    if (kept === undefined) this.#streams.set(streamId, [event]);
    else kept.push(event);
    this.#bytes += text.length;
    while (this.#bytes > this.#budgetBytes || this.#events.size > this.#maxEvents) this.#evictOldest();
    return eventId;
  }

  /** The stream an id this store issued belongs to, whether or not its event is still kept. */
  streamIdOf(eventId: string): string | undefined {
    const at = eventId.lastIndexOf('_');
    if (at <= 0) return undefined;
    const seq = sequenceOf(eventId, at);
    return seq === undefined || seq > this.#seq ? undefined : eventId.slice(0, at);
  }

  replayAfter(lastEventId: string, send: (eventId: string, text: string) => void): void {
    const streamId = this.streamIdOf(lastEventId);
    if (streamId === undefined) return;
    const after = sequenceOf(lastEventId, streamId.length)!;
    for (const event of this.#streams.get(streamId) ?? []) {
      if (event.seq > after) send(`${streamId}_${event.seq}`, event.text);
    }
  }

  forgetStream(streamId: string): void {
    const kept = this.#streams.get(streamId);
    if (kept === undefined) return;
    this.#streams.delete(streamId);
    for (const event of kept) {
      this.#events.delete(event.seq);
      this.#bytes -= event.text.length;
    }
  }

  #evictOldest(): void {
    const oldest = this.#events.values().next().value!;
    this.#events.delete(oldest.seq);
    this.#bytes -= oldest.text.length;
    const kept = this.#streams.get(oldest.streamId)!;
    // Sequences grow across the session, so a stream's oldest kept event is the session's oldest.
    kept.shift();
    if (kept.length === 0) this.#streams.delete(oldest.streamId);
  }
}

/** The sequence after the `_` at `at`, or undefined when it is not one this store writes. */
function sequenceOf(eventId: string, at: number): number | undefined {
  const digits = eventId.slice(at + 1);
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return undefined;
  return Number(digits);
}
