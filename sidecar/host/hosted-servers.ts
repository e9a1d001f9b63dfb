/**
 * HostedServers: the servers this host is running right now, with what each was launched from
 * (server name, agent, the server config, the effective trust revision), so a change of the
 * config dir can end exactly the ones it affects (`reload`) and leave every other session alone.
 *
 * Each is tracked through its transport: the wrapper counts requests in flight (until answered or
 * cancelled: a server that honours a cancellation never answers; the listen the host opens for a
 * legacy session never counts) for the process
 * budget's slot, forgets the server (and gives the slot back) when the transport closes, and can
 * end it with a `WireError`, which its channel then closes with (`limit-reached`,
 * `trust-profile-stale`, `server-exited`), so the agent learns why. A request the transport did
 * not take (a full stdin, a closed process) is not in flight. The wrapper can be held back
 * as the transport it wraps (`holdReading`, `shared/link/link-flow.ts`).
 *
 * @module
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpConnection } from '../../shared/connection-request.ts';
import type { WireError } from '../../shared/errors.ts';
import { isCancellation } from '../../shared/json-rpc-guards.ts';
import { holdReadingOf, type ReadHold } from '../../shared/link/link-flow.ts';
import type { ReservedSlot } from './process-budget.ts';
import { isHostOpenedListen } from '../../shared/era-bridge/legacy-agent-listen.ts';
import type { ServerConfig } from './server-config.ts';

/** What a running server was launched from. */
export interface HostedFacts {
  readonly name: string;
  readonly connection: McpConnection;
  readonly config: ServerConfig;
  /** The host's own entry, when `config` merged the worker's into it (an inner http target's URL and headers). */
  readonly listed?: ServerConfig;
  /** Effective trust revision, null for an uncontained launch. */
  readonly revision: string | null;
}

interface Entry {
  readonly facts: HostedFacts;
  end(error: WireError): void;
}

export class HostedServers {
  readonly #entries = new Set<Entry>();

  get size(): number {
    return this.#entries.size;
  }

  /** Wraps the server's transport so it is tracked (and holds `slot`) for as long as it is open. */
  track(inner: Transport, facts: HostedFacts, reserved?: ReservedSlot): Transport {
    const slot = reserved?.slot;
    const pending = new Set<string | number>();
    let entry: Entry | undefined;
    const forget = () => {
      slot?.release();
      if (entry !== undefined) this.#entries.delete(entry);
    };
    const outer: Transport & ReadHold = {
      async start() {
        try {
          await inner.start();
        } catch (error) {
          forget();
          throw error;
        }
      },
      async send(message: JSONRPCMessage, options?: TransportSendOptions) {
        let added: string | number | undefined;
        // The listen the host opens for every legacy session on a modern server is a standing
        // watch, not work: counted busy, that session's process could never be ended to make
        // room, where the same session idle on a legacy server would be. An agent's own listen
        // is its request, and counts.
        if (slot !== undefined && 'method' in message && 'id' in message && !isHostOpenedListen(message) && !pending.has(message.id)) {
          pending.add((added = message.id));
          slot.inFlight(1);
        }
        try {
          await inner.send(message, options);
        } catch (error) {
          // Never to be answered: counted busy, it would keep the process from ever being ended to make room.
          if (added !== undefined && pending.delete(added)) slot?.inFlight(-1);
          throw error;
        }
        // Once the server has it: a server that honours it never answers, and counted busy the
        // process could never be ended to make room; one the server never got leaves it working.
        if (slot !== undefined && isCancellation(message) && pending.delete(message.params.requestId)) slot.inFlight(-1);
      },
      holdReading: () => holdReadingOf(inner),
      async close() {
        forget();
        await inner.close();
      },
    };
    inner.onmessage = (message, extra) => {
      if (slot !== undefined && !('method' in message) && 'id' in message && pending.delete(message.id as string | number)) slot.inFlight(-1);
      // A server tearing a listen down (the one cancel a server sends): never answered after it (review of s23).
      if (slot !== undefined && isCancellation(message) && pending.delete(message.params.requestId)) slot.inFlight(-1);
      outer.onmessage?.(message, extra);
    };
    inner.onerror = (error) => outer.onerror?.(error);
    inner.onclose = () => {
      forget();
      outer.onclose?.();
    };
    if (inner.setProtocolVersion !== undefined) outer.setProtocolVersion = (version) => inner.setProtocolVersion!(version);
    Object.defineProperty(outer, 'sessionId', { get: () => inner.sessionId, enumerable: true });
    const end = (error: WireError) => {
      forget();
      outer.onerror?.(error);
      void inner.close().catch(() => {});
    };
    entry = { facts, end };
    this.#entries.add(entry);
    reserved?.bind(end);
    return outer;
  }

  /**
   * Ends every server `check` finds a reason to end (after a config change); others keep running.
   * @returns How many were ended.
   */
  async endWhere(check: (facts: HostedFacts) => Promise<WireError | null>): Promise<number> {
    const entries = [...this.#entries];
    const verdicts = await Promise.all(entries.map(async (entry) => ({ entry, error: await check(entry.facts) })));
    let ended = 0;
    for (const { entry, error } of verdicts) {
      if (error === null || !this.#entries.has(entry)) continue;
      entry.end(error);
      ended += 1;
    }
    return ended;
  }
}
