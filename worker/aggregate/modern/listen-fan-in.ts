/**
 * ListenFanIn: one `subscriptions/listen` on `/mcp` as the listen streams of every server of the
 * agent, merged into one channel-like transport that `relayListen` serves as the agent's stream.
 *
 * - The listen request goes to every server with the agent's filter and id (the host tags each
 *   stream's messages with that id, so they need no re-tagging), its `resourceSubscriptions` cut
 *   to the URIs that server serves.
 * - The acknowledgement is the agent's first message: it waits for every server's own (or its
 *   end), for at most `ackWaitMs` once one is in, and acknowledges the union of what those in
 *   agreed to honour; a later server's acknowledgement is swallowed and its notifications pass
 *   on. A notification that comes earlier waits behind it, once (a repeat is dropped), within
 *   `MAX_EARLY_BYTES` in all.
 * - A server whose stream ends gracefully (its closing result) leaves the others running; when the
 *   last one ends, so does the agent's stream (gracefully, with the closing result, when every
 *   server closed gracefully). One that drops (no response: its server ended or tore it down)
 *   drops the agent's stream, the others closed with it, so the agent listens again.
 *   If none acknowledged at all, the first server's error is the answer.
 * - Closing it (the agent went away) closes every server's channel: each host ends its
 *   subscription upstream.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from '../../../shared/records.ts';
import { unrefTimer } from '../../../shared/unref-timer.ts';

type Id = string | number;
type Filter = Record<string, unknown> & { resourceSubscriptions?: string[] };

interface Part {
  server: string;
  channel: Transport;
  /** The URIs of the filter's `resourceSubscriptions` this server serves; all of them when undefined. */
  uris?: readonly string[];
  state: 'waiting' | 'acked' | 'ended';
  filter?: Filter;
  /** How it ended: its closing result or error, none when its channel just closed. */
  end?: JSONRPCMessage;
}

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
/** Characters of notifications held, all together, while a server has yet to acknowledge. */
export const MAX_EARLY_BYTES = 1024 * 1024;
const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

export class ListenFanIn implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;

  readonly #parts: Part[];
  #id: Id | undefined;
  #acked = false;
  #closed = false;
  readonly #early: JSONRPCMessage[] = [];
  readonly #earlyTexts = new Set<string>();
  #earlyBytes = 0;

  readonly #ackWaitMs: number | undefined;
  #ackTimer: ReturnType<typeof setTimeout> | undefined;
  /** The wait for every server's acknowledgement is over: the merged one goes with those in. */
  #ackWaitOver = false;

  /** `ackWaitMs`: how long the merged acknowledgement waits for a server's own (the start wait); for ever when undefined. */
  constructor(channels: ReadonlyArray<{ server: string; channel: Transport; uris?: readonly string[] }>, options: { ackWaitMs?: number } = {}) {
    this.#parts = channels.map((part) => ({ ...part, state: 'waiting' }));
    this.#ackWaitMs = options.ackWaitMs;
  }

  async start(): Promise<void> {
    for (const part of this.#parts) {
      part.channel.onmessage = (message) => this.#fromPart(part, message);
      part.channel.onclose = () => this.#ended(part);
      part.channel.onerror = (error) => this.onerror?.(error);
    }
    await Promise.all(this.#parts.map((part) => part.channel.start().catch(() => this.#ended(part))));
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message) this.#id = message.id as Id;
    // One server that never acknowledges must not hold the others' notifications, nor the agent, for good.
    if (this.#ackWaitMs !== undefined && this.#ackTimer === undefined) {
      this.#ackTimer = setTimeout(() => {
        this.#ackWaitOver = true;
        this.#settle();
      }, this.#ackWaitMs);
      unrefTimer(this.#ackTimer);
    }
    await Promise.all(this.#parts.map((part) => part.channel.send(forPart(message, part)).catch(() => this.#ended(part))));
  }

  async close(): Promise<void> {
    // Its own close is no server's drop: the parts' closes that follow settle nothing, and it
    // says its close once, as a transport does.
    const wasClosed = this.#closed;
    this.#closed = true;
    clearTimeout(this.#ackTimer);
    await Promise.all(this.#parts.map((part) => part.channel.close().catch(() => {})));
    if (!wasClosed) this.onclose?.();
  }

  #fromPart(part: Part, message: JSONRPCMessage): void {
    if (part.state === 'ended') return;
    if (!('method' in message)) {
      part.end = message;
      part.state = 'ended';
      void part.channel.close().catch(() => {});
      return this.#settle();
    }
    if (message.method === ACKNOWLEDGED && part.state === 'waiting') {
      const notifications = (message.params as { notifications?: unknown } | undefined)?.notifications;
      part.filter = isRecord(notifications) ? (notifications as Filter) : {};
      part.state = 'acked';
      return this.#settle();
    }
    if (this.#acked) return this.onmessage?.(message);
    // Held until every server acknowledged, which one server may never do: held once each, and
    // at most `MAX_EARLY_BYTES` (what waits here is in no stream yet, under no unread bound).
    // A change notification is a hint to list or read again: one dropped past the bound costs a
    // refresh the agent's next list makes anyway.
    const text = JSON.stringify(message);
    if (this.#earlyTexts.has(text) || this.#earlyBytes + text.length > MAX_EARLY_BYTES) return;
    this.#earlyTexts.add(text);
    this.#earlyBytes += text.length;
    this.#early.push(message);
  }

  #ended(part: Part): void {
    if (part.state === 'ended') return;
    const wasListening = part.state === 'acked';
    part.state = 'ended';
    // A stream that dropped (its server ended or tore it down) is one the agent must listen to
    // again (subscriptions.mdx), which it knows only from its own stream dropping: so it drops,
    // and the other servers' streams are closed with it (review s23: it was left out silently).
    if (wasListening && this.#acked && !this.#closed) {
      this.#closed = true;
      for (const other of this.#parts) if (other !== part) void other.channel.close().catch(() => {});
      this.onclose?.();
      return;
    }
    // Dropped before the agent's acknowledgement: what it honoured is not the agent's to be told.
    delete part.filter;
    this.#settle();
  }

  /** Sends the merged acknowledgement once no server is still waiting, and ends when every one has ended. */
  #settle(): void {
    if (this.#closed) return;
    const waitOver = this.#ackWaitOver && this.#parts.some((part) => part.filter !== undefined);
    if (!this.#acked && (waitOver || this.#parts.every((part) => part.state !== 'waiting'))) {
      clearTimeout(this.#ackTimer);
      const acked = this.#parts.filter((part) => part.filter !== undefined);
      if (acked.length === 0) {
        const error = this.#parts.find((part) => part.end !== undefined && 'error' in part.end)?.end;
        this.#closed = true;
        if (error !== undefined) this.onmessage?.(error);
        else this.onclose?.();
        return;
      }
      this.#acked = true;
      this.onmessage?.({ jsonrpc: '2.0', method: ACKNOWLEDGED, params: { _meta: { [SUBSCRIPTION_ID_KEY]: this.#id }, notifications: union(acked.map((p) => p.filter!)) } } as JSONRPCMessage);
      this.#earlyTexts.clear();
      for (const message of this.#early.splice(0)) this.onmessage?.(message);
    }
    if (this.#acked && this.#parts.every((part) => part.state === 'ended')) {
      this.#closed = true;
      const graceful = this.#parts.every((part) => part.end !== undefined && 'result' in part.end);
      if (graceful) this.onmessage?.({ jsonrpc: '2.0', id: this.#id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_KEY]: this.#id } } } as JSONRPCMessage);
      else this.onclose?.();
    }
  }
}

/** The listen request as one server gets it: only the watched URIs it serves. */
function forPart(message: JSONRPCMessage, part: Part): JSONRPCMessage {
  const params = (message as { params?: Record<string, unknown> }).params;
  const filter = params?.notifications;
  if (part.uris === undefined || !isRecord(filter)) return message;
  const { resourceSubscriptions: _all, ...rest } = filter;
  return { ...message, params: { ...params, notifications: { ...rest, ...(part.uris.length > 0 ? { resourceSubscriptions: [...part.uris] } : {}) } } } as JSONRPCMessage;
}

/** The union of the filters the servers acknowledged. */
export function union(filters: readonly Filter[]): Filter {
  const merged: Filter = {};
  const uris = new Set<string>();
  for (const filter of filters) {
    for (const [key, value] of Object.entries(filter)) if (value === true) merged[key] = true;
    for (const uri of Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions : []) if (typeof uri === 'string') uris.add(uri);
  }
  if (uris.size > 0) merged.resourceSubscriptions = [...uris];
  return merged;
}
