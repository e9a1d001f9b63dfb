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
 * - when the process ends, every call in flight fails with the instance's exit error.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../../shared/errors.ts';
import { INPUT_CAPABLE_METHODS, type InputRequest } from './input-requests.ts';
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
  /** Writes one message to the server. */
  send(message: JSONRPCMessage): Promise<void>;
  /** Why a call fails when writing to the server fails (the process is gone). */
  exitError(): WireError;
  /** Called whenever the number of calls in flight changes, until `end`. */
  onActivity?: (inFlight: number) => void;
}

export class InFlightCalls {
  readonly #options: InFlightCallsOptions;
  readonly #calls = new Map<number, InFlightCall>();
  /** Upstream progress token → upstream id of the call it belongs to. */
  readonly #tokens = new Map<string, number>();
  #nextId = 1;
  #ended: WireError | null = null;

  constructor(options: InFlightCallsOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#calls.size;
  }

  /** The error every call gets once the process has ended; null while it runs. */
  get ended(): WireError | null {
    return this.#ended;
  }

  values(): IterableIterator<InFlightCall> {
    return this.#calls.values();
  }

  /** The one call in flight, when there is exactly one (what an unattributed log line may go to). */
  alone(): InFlightCall | undefined {
    if (this.#calls.size !== 1) return undefined;
    const [call] = this.#calls.values();
    return call;
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
    this.#options.send(message).catch((error: unknown) => {
      this.settle(upstreamId)?.reject(error instanceof WireError ? error : this.#options.exitError());
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
    this.#options.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason } }).catch(() => {});
  }

  /** Hands a server's `notifications/progress` to its call, under the caller's own token. */
  progress(params: Record<string, unknown> | undefined): void {
    const upstreamId = this.#tokens.get(String(params?.progressToken));
    const call = upstreamId === undefined ? undefined : this.#calls.get(upstreamId);
    if (call === undefined || call.token === undefined) return;
    call.sink.notify({ method: 'notifications/progress', params: { ...params, progressToken: call.token } });
  }

  /** The process has ended: every call in flight fails with `error`, and later ones at once. */
  end(error: WireError): void {
    if (this.#ended !== null) return;
    this.#ended = error;
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    this.#tokens.clear();
    for (const call of calls) call.reject(error);
  }

  #activity(): void {
    if (this.#ended === null) this.#options.onActivity?.(this.#calls.size);
  }
}

