/**
 * A bounded, in-memory SSE event store for one agent session, so a client whose stream dropped
 * can resume with `Last-Event-ID` and miss nothing, as it could against the server itself. It
 * keeps the last `maxEvents` events of the session; older ones are forgotten, and a resume from a
 * forgotten id replays nothing rather than guessing.
 *
 * Session state lives behind the session table (DESIGN §8), so this store goes with its session,
 * and is synchronous (`LegacyEventStore`).
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { LegacyEventStore } from '../sessions/legacy-http-endpoint.ts';

type StoredMessage = JSONRPCMessage | Record<string, never>;

interface StoredEvent {
  streamId: string;
  message: StoredMessage;
}

export class SessionEventStore implements LegacyEventStore {
  readonly #events = new Map<string, StoredEvent>();
  readonly #maxEvents: number;
  #seq = 0;

  constructor(maxEvents = 512) {
    this.#maxEvents = maxEvents;
  }

  get size(): number {
    return this.#events.size;
  }

  storeEvent(streamId: string, message: StoredMessage): string {
    const eventId = `${streamId}_${++this.#seq}`;
    this.#events.set(eventId, { streamId, message });
    // Maps iterate in insertion order, so the first key is the oldest event.
    if (this.#events.size > this.#maxEvents) this.#events.delete(this.#events.keys().next().value!);
    return eventId;
  }

  streamIdOf(eventId: string): string | undefined {
    return this.#events.get(eventId)?.streamId;
  }

  replayAfter(lastEventId: string, send: (eventId: string, message: StoredMessage) => void): void {
    const last = this.#events.get(lastEventId);
    if (last === undefined) return;
    let after = false;
    for (const [eventId, event] of this.#events) {
      if (eventId === lastEventId) after = true;
      else if (after && event.streamId === last.streamId) send(eventId, event.message);
    }
  }
}
