/**
 * A bounded, in-memory SSE event store for one agent session, so a client whose stream dropped
 * can resume with `Last-Event-ID` and miss nothing, as it could against the server itself. It
 * keeps the last `maxEvents` events of the session; older ones are forgotten, and a resume from a
 * forgotten id replays nothing rather than guessing.
 *
 * Session state lives behind the session table (DESIGN §8), so this store goes with its session.
 *
 * @module
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface StoredEvent {
  streamId: string;
  message: JSONRPCMessage;
}

export class SessionEventStore implements EventStore {
  readonly #events = new Map<string, StoredEvent>();
  readonly #maxEvents: number;
  #seq = 0;

  constructor(maxEvents = 512) {
    this.#maxEvents = maxEvents;
  }

  get size(): number {
    return this.#events.size;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${streamId}_${++this.#seq}`;
    this.#events.set(eventId, { streamId, message });
    // Maps iterate in insertion order, so the first key is the oldest event.
    if (this.#events.size > this.#maxEvents) this.#events.delete(this.#events.keys().next().value!);
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const last = this.#events.get(lastEventId);
    if (last === undefined) return '';
    let after = false;
    for (const [eventId, event] of [...this.#events]) {
      if (eventId === lastEventId) after = true;
      else if (after && event.streamId === last.streamId) await send(eventId, event.message);
    }
    return last.streamId;
  }
}
