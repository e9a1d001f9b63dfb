/**
 * ModernServerInstance: one modern (2026-07-28) stdio server process kept by the host for one
 * agent, the counterpart of `LegacyInstance` for a server whose probe said modern (DESIGN §9).
 *
 * A modern server needs no handshake, so requests go to it as the agent sent them: `_meta` kept
 * (version, capabilities, clientInfo, logLevel), results already modern. What the host still does:
 * - ids and progress tokens are remapped, for the same reason as on a legacy instance (one
 *   agent's concurrent requests may reuse an id or token), and restored on the way back;
 * - `notifications/message` is passed on only while exactly one request is in flight: on stdio
 *   nothing ties a log line to its request;
 * - a server→client request is refused (a modern server must not send one: it asks for input
 *   with an `InputRequiredResult` instead);
 * - a sign that the cached verdict was wrong (an error to `server/discover` other than -32022, or
 *   method-not-found for a method its discover result announced) is reported through
 *   `onEraMismatch`, so the owner forgets the verdict and ends this instance;
 * - the process ending fails every request in flight with `server-exited`.
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../log.ts';
import { InFlightCalls } from './in-flight-calls.ts';
import type { Call, CallSink, InstanceRequest } from './legacy-instance.ts';
import { SERVER_INFO_KEY, type Implementation, type JsonRpcErrorShape } from './modern-results.ts';
import type { StartedTransport } from './server-era.ts';
import type { DiscoverResult } from '../../../shared/era-bridge/discover-verdict.ts';
import { SUBSCRIPTION_ID_KEY } from '../../../shared/era-bridge/subscription-filter.ts';
import { isRecord } from '../../../shared/records.ts';
import { holdReadingOf } from '../../../shared/link/link-flow.ts';
import { answerBrokeOff } from '../../../shared/modern-http-transport.ts';

export interface ModernServerInstanceOptions {
  server: string;
  /** Started by the probe, or not yet started (a cached verdict): the instance starts it either way. */
  transport: StartedTransport;
  /** The probe's `server/discover` result, when it gave one. */
  discover: DiscoverResult | null;
  log: Logger;
  onActivity?: (inFlight: number) => void;
  onEnded?: () => void;
  /** The server answered as no modern server would: the era verdict is wrong. */
  onEraMismatch?: () => void;
}

const METHOD_NOT_FOUND = -32601;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The capability a method's server feature is announced under in `server/discover`. */
const CAPABILITY_OF: Record<string, string> = {
  'tools/list': 'tools',
  'tools/call': 'tools',
  'prompts/list': 'prompts',
  'prompts/get': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resources',
  'resources/read': 'resources',
  'completion/complete': 'completions',
};

export class ModernServerInstance {
  readonly era = 'modern' as const;
  readonly server: string;
  readonly #transport: StartedTransport;
  readonly #log: Logger;
  readonly #options: ModernServerInstanceOptions;
  readonly #calls: InFlightCalls;

  private constructor(options: ModernServerInstanceOptions) {
    this.server = options.server;
    this.#transport = options.transport;
    this.#log = options.log;
    this.#options = options;
    this.#calls = new InFlightCalls(options);
  }

  static async start(options: ModernServerInstanceOptions): Promise<ModernServerInstance> {
    const instance = new ModernServerInstance(options);
    instance.#calls.wire((message) => instance.#fromServer(message));
    await options.transport.start();
    return instance;
  }

  /** The server's `server/discover` result from the probe, if the probe gave one. */
  get discover(): DiscoverResult | null {
    return this.#options.discover;
  }

  get serverInfo(): Implementation | undefined {
    const meta = this.#options.discover?._meta as Record<string, unknown> | undefined;
    return meta?.[SERVER_INFO_KEY] as Implementation | undefined;
  }

  get pid(): number | undefined {
    return this.#transport.pid;
  }

  get inFlight(): number {
    return this.#calls.size;
  }

  get ended(): boolean {
    return this.#calls.ended !== null;
  }

  /** Whether the host ended the process, not the process itself (`InFlightCalls.closedByHost`). */
  get closedByHost(): boolean {
    return this.#calls.closedByHost;
  }

  get closed(): Promise<void> {
    return this.#calls.closed;
  }

  /** Holds back the process's output while a channel it serves is held (`shared/link/link-flow.ts`). */
  holdReading(): () => void {
    return holdReadingOf(this.#transport);
  }

  /** Forwards one modern request, `_meta` and all, under a fresh upstream id. */
  call(request: InstanceRequest, sink: CallSink): Call {
    return this.#calls.start(request, sink);
  }

  /** Ends the process; `graceful` as `InFlightCalls.close` has it. */
  close(graceful = true): Promise<void> {
    return this.#calls.close(graceful);
  }

  #fromServer(message: JSONRPCMessage): void {
    if ('method' in message && 'id' in message) {
      this.#log.debug('Server request refused: a modern server asks for input with an InputRequiredResult', { method: message.method });
      this.#calls.send({ jsonrpc: '2.0', id: message.id, error: { code: METHOD_NOT_FOUND, message: `Method not supported from a modern server: ${message.method}` } });
      return;
    }
    if ('method' in message) return this.#notification(message.method, message.params as Record<string, unknown> | undefined);
    if (!('id' in message) || typeof message.id !== 'number') return;
    const pending = this.#calls.settle(message.id);
    if (pending === undefined) return;
    if ('result' in message) pending.resolve({ result: message.result });
    else if ('error' in message) {
      const error = message.error as JsonRpcErrorShape;
      if (this.#contradictsEra(pending.method, error)) {
        this.#log.warn('A server taken for modern answered as a legacy one: its era is probed again on the next launch', { method: pending.method, code: error.code });
        this.#options.onEraMismatch?.();
      }
      pending.resolve({ error });
    }
  }

  #contradictsEra(method: string, error: JsonRpcErrorShape): boolean {
    // An answer that never came (`answerBrokeOff`: a stream broken off, a proxy's 5xx) says nothing of the server's era.
    if (method === 'server/discover') return error.code !== UNSUPPORTED_PROTOCOL_VERSION && !answerBrokeOff(error);
    const capability = CAPABILITY_OF[method];
    return error.code === METHOD_NOT_FOUND && capability !== undefined && this.#options.discover?.capabilities[capability] !== undefined;
  }

  #notification(method: string, params: Record<string, unknown> | undefined): void {
    if (method === 'notifications/progress') return this.#calls.progress(params);
    // How a server tears a subscription down (cancellation.mdx: the one use it has for
    // `notifications/cancelled`): the listen ends, abruptly, so its agent listens again.
    if (method === 'notifications/cancelled') {
      const id = params?.requestId;
      if (typeof id === 'number' && this.#calls.get(id)?.method === 'subscriptions/listen') {
        this.#calls.settle(id)!.reject(new WireError('server-exited', `Server "${this.server}" ended the subscription`, { detail: { server: this.server } }));
      }
      return;
    }
    if (method === 'notifications/message') {
      // The server applies the request's logLevel itself; which request a line belongs to is known only when one is in flight.
      const alone = this.#calls.alone();
      if (alone !== undefined && alone.sink.logLevel !== null) alone.sink.notify({ method, ...(params ? { params } : {}) });
      return;
    }
    // A listen stream's messages name it by the id the host gave the listen request.
    const subscription = isRecord(params?._meta) ? params._meta[SUBSCRIPTION_ID_KEY] : undefined;
    const listen = typeof subscription === 'number' ? this.#calls.get(subscription) : undefined;
    if (listen !== undefined) return listen.sink.notify({ method, ...(params ? { params } : {}) });
    this.#log.debug('Server notification for no open request dropped', { method });
  }}
