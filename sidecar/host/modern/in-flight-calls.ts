/**
 * InFlightCalls: the calls one agent has in flight on one server process, shared by both kinds of
 * instance (`LegacyInstance`, `ModernServerInstance`). It is what makes one stdio stream carry
 * many stateless requests:
 * - the host numbers upstream requests itself, because two modern requests of one agent may carry
 *   the same id; the original id goes back only on the answer (the instance's caller keeps it);
 * - progress tokens are remapped for the same reason, and each progress notification is handed to
 *   its call with the caller's own token;
 * - a log line names no request on stdio, so `alone()` gives the call only while exactly one is in
 *   flight;
 * - when the process ends (or the instance closes it), every call in flight fails with
 *   `server-exited`, carrying the transport's own reason when it gave one (a sandbox failure).
 *
 * It also owns the process's end, the part both instances share: the transport's close and error
 * callbacks, the exit error, and `closed`.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../log.ts';
import { WireError } from '../../../shared/errors.ts';
import { INPUT_CAPABLE_METHODS, type InputRequest } from '../../../shared/era-bridge/input-requests.ts';
import type { JsonRpcErrorShape, LogLevel } from './modern-results.ts';

type Id = string | number;

/** A request forwarded to the instance, as the host wants it sent (original id, meta already stripped). */
export interface InstanceRequest {
  method: string;
  params?: Record<string, unknown> & { _meta?: Record<string, unknown> };
}

/** How one call's traffic comes back. */
export interface CallSink {
  /** A notification for this call (progress with the caller's own token, or a log line). */
  notify(notification: { method: string; params?: Record<string, unknown> }): void;
  /** The log threshold the request asked for; none means no log lines. */
  logLevel: LogLevel | null;
  /** A server→client request attributed to this call; without it such requests are refused. */
  input?(request: ServerRequest): void;
  /**
   * True while the call waits for the agent's retry, its questions asked already and no request
   * attached: a new question is then taken for another call's, when exactly one other is attached.
   */
  readonly parked?: boolean;
}

/** A server→client request waiting for its answer, which goes to the server verbatim. */
export interface ServerRequest extends InputRequest {
  /** Answers the server (once; later calls do nothing). */
  answer(response: { result: unknown } | { error: JsonRpcErrorShape }): void;
}

export type CallOutcome = { result: unknown } | { error: JsonRpcErrorShape };

export interface Call {
  /** The upstream id the instance gave this call. */
  readonly upstreamId: number;
  /** Settles with the server's answer; rejects with a `WireError` (`server-exited`) when the process ends first. */
  readonly outcome: Promise<CallOutcome>;
  /** Stops waiting and tells the server (`notifications/cancelled` for the upstream id). */
  cancel(reason: string): void;
}


/** One call in flight. */
export interface InFlightCall {
  readonly method: string;
  readonly sink: CallSink;
  /** May receive server→client requests (tools/call, prompts/get, resources/read). */
  readonly inputCapable: boolean;
  /** The caller's own progress token, restored on each progress notification. */
  readonly token: Id | undefined;
  resolve(outcome: CallOutcome): void;
  reject(error: WireError): void;
}

export interface InFlightCallsOptions {
  server: string;
  /** The server's stdio transport; `wire` takes over its callbacks. */
  transport: Transport;
  log: Logger;
  /** Called whenever the number of calls in flight changes, until the end. */
  onActivity?: (inFlight: number) => void;
  /** Called once when the process has ended, by its own exit or by `close`. */
  onEnded?: () => void;
}

export class InFlightCalls {
  readonly #options: InFlightCallsOptions;
  readonly #calls = new Map<number, InFlightCall>();
  /** Upstream progress token → upstream id of the call it belongs to. */
  readonly #tokens = new Map<string, number>();
  #nextId = 1;
  #ended: WireError | null = null;
  #closedByHost = false;
  #failure: WireError | undefined;
  readonly #closed: Promise<void>;
  #resolveClosed!: () => void;

  constructor(options: InFlightCallsOptions) {
    this.#options = options;
    this.#closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  /** Routes the server's messages to `onMessage` and watches the transport for its end. */
  wire(onMessage: (message: JSONRPCMessage) => void): void {
    const transport = this.#options.transport;
    transport.onmessage = onMessage;
    transport.onerror = (error) => {
      if (error instanceof WireError) this.#failure = error;
      this.#options.log.debug('Server instance transport error', { server: this.#options.server, error });
    };
    transport.onclose = () => this.#end();
  }

  /** The transport's own failure (a sandbox that could not start), when it reported one. */
  get failure(): WireError | undefined {
    return this.#failure;
  }

  /** Settles when the process has ended. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Writes one message to the server; nothing once it has ended. */
  send(message: JSONRPCMessage): void {
    if (this.#ended === null) this.#options.transport.send(message).catch(() => {});
  }

  /**
   * Ends the process; calls in flight fail with `server-exited`. `graceful` false: ended as if the
   * process had ended itself (its listens drop rather than complete), for a server found wrong.
   */
  async close(graceful = true): Promise<void> {
    if (this.#ended === null) this.#closedByHost = graceful;
    await this.#options.transport.close().catch(() => {});
    this.#end();
    await this.#closed;
  }

  get size(): number {
    return this.#calls.size;
  }

  /**
   * Whether the host ended the process (a stop, a reload, the idle clock), not the process itself
   * (a crash, an exit): what ends a listen stream gracefully rather than abruptly.
   */
  get closedByHost(): boolean {
    return this.#closedByHost;
  }

  /** The error every call gets once the process has ended; null while it runs. */
  get ended(): WireError | null {
    return this.#ended;
  }

  values(): IterableIterator<InFlightCall> {
    return this.#calls.values();
  }

  /** The call in flight under `upstreamId`, if it is. */
  get(upstreamId: number): InFlightCall | undefined {
    return this.#calls.get(upstreamId);
  }

  /**
   * The one call in flight, when there is exactly one (what an unattributed log line may go to);
   * an open listen stream does not count, it never takes log lines.
   */
  alone(): InFlightCall | undefined {
    const calls = [...this.#calls.values()].filter((call) => call.method !== 'subscriptions/listen');
    return calls.length === 1 ? calls[0] : undefined;
  }

  /** Sends `request` under a fresh upstream id and progress token; see `Call`. */
  start(request: InstanceRequest, sink: CallSink): Call {
    const upstreamId = this.#nextId++;
    let settle!: Pick<InFlightCall, 'resolve' | 'reject'>;
    const outcome = new Promise<CallOutcome>((resolve, reject) => (settle = { resolve, reject }));
    const call: Call = { upstreamId, outcome, cancel: (reason) => this.cancel(upstreamId, reason) };
    if (this.#ended !== null) {
      settle.reject(this.#ended);
      return call;
    }
    const token = request.params?._meta?.progressToken as Id | undefined;
    let params = request.params;
    if (token !== undefined) {
      const upstreamToken = `switchyard-${upstreamId}`;
      this.#tokens.set(upstreamToken, upstreamId);
      params = { ...params, _meta: { ...params!._meta, progressToken: upstreamToken } };
    }
    this.#calls.set(upstreamId, { method: request.method, sink, token, inputCapable: INPUT_CAPABLE_METHODS.has(request.method), ...settle });
    this.#activity();
    const message = { jsonrpc: '2.0', id: upstreamId, method: request.method, ...(params !== undefined ? { params } : {}) } as JSONRPCMessage;
    this.#options.transport.send(message).catch((error: unknown) => {
      this.settle(upstreamId)?.reject(error instanceof WireError ? error : this.#exitError());
    });
    return call;
  }

  /** Takes a call out of flight, returning it (undefined when it was not in flight). */
  settle(upstreamId: number): InFlightCall | undefined {
    const call = this.#calls.get(upstreamId);
    if (call === undefined) return undefined;
    this.#calls.delete(upstreamId);
    this.#tokens.delete(`switchyard-${upstreamId}`);
    this.#activity();
    return call;
  }

  /** Stops waiting for a call and tells the server (`notifications/cancelled` for its upstream id). */
  cancel(upstreamId: number, reason: string): void {
    if (this.settle(upstreamId) === undefined || this.#ended !== null) return;
    this.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason } });
  }

  /** Hands a server's `notifications/progress` to its call, under the caller's own token. */
  progress(params: Record<string, unknown> | undefined): void {
    const upstreamId = this.#tokens.get(String(params?.progressToken));
    const call = upstreamId === undefined ? undefined : this.#calls.get(upstreamId);
    if (call === undefined || call.token === undefined) return;
    call.sink.notify({ method: 'notifications/progress', params: { ...params, progressToken: call.token } });
  }

  #exitError(): WireError {
    const server = this.#options.server;
    return this.#failure ?? new WireError('server-exited', `Server "${server}" closed its connection`, { detail: { server } });
  }

  /** The process has ended: every call in flight fails, and later ones at once. */
  #end(): void {
    if (this.#ended !== null) return;
    const error = this.#exitError();
    const server = this.#options.server;
    this.#ended = error.reason === 'server-exited' ? error : new WireError('server-exited', error.message, { detail: { server } });
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    this.#tokens.clear();
    for (const call of calls) call.reject(this.#ended);
    this.#options.onEnded?.();
    this.#resolveClosed();
  }

  #activity(): void {
    if (this.#ended === null) this.#options.onActivity?.(this.#calls.size);
  }
}

