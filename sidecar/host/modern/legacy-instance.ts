/**
 * LegacyInstance: one legacy (session-based) server process kept by the host for one agent, so
 * that agent's stateless modern requests can reach it (DESIGN §9). The host initializes it on the
 * agent's behalf and multiplexes that agent's concurrent requests over its one stdio stream.
 *
 * Why each piece:
 * - ids are remapped (the host numbers upstream requests itself): two modern requests of one
 *   agent may carry the same id, and the original one goes back only on the answer;
 * - progress tokens are remapped too, for the same reason, and restored on each notification;
 * - `notifications/message` carries nothing that ties it to a request (notes §4, "Correlation
 *   hazard"), so it is passed on only while exactly one request is in flight, and only to one that
 *   asked for a `logLevel`, at or above it;
 * - the host declares `elicitation`, `sampling` and `roots` at `initialize`, so a server registers
 *   the tools that ask for them (server-everything does so only then); a server→client request is
 *   handed to the one input-capable call in flight (`CallSink.input`, which turns it into an
 *   `InputRequiredResult`). Like a log line it names no call, so with several such calls in flight
 *   it cannot be attributed and is refused with an error (notes §4 "Correlation hazard"); with none,
 *   `roots/list` gets an empty list (server-everything asks right after `initialized`) and the others
 *   an error;
 * - the process ending fails every request in flight with `server-exited` (its exit reason when
 *   the transport gave one), and the instance is done: the pool starts a fresh one next time.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../../shared/errors.ts';
import type { Logger } from '../../log.ts';
import { INPUT_CAPABLE_METHODS, inputRequestOf, isInputMethod, type InputRequest } from './input-requests.ts';
import { InitializeResultSchema, logLevelPasses, type Implementation, type InitializeResult, type JsonRpcErrorShape, type LogLevel } from './modern-results.ts';

/** The legacy revision the host negotiates (the latest the SDK speaks). */
export const LEGACY_PROTOCOL_VERSION = '2025-11-25';

/** What the host declares at `initialize`: everything a modern agent may answer through MRTR. */
export const CLIENT_CAPABILITIES = { elicitation: {}, sampling: {}, roots: {} } as const;

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

/** Error code for a server→client request the host cannot route to a caller. */
const SERVER_REQUEST_REFUSED = -32603;

export type CallOutcome = { result: unknown } | { error: JsonRpcErrorShape };

export interface Call {
  /** The upstream id the instance gave this call. */
  readonly upstreamId: number;
  /** Settles with the server's answer; rejects with a `WireError` (`server-exited`) when the process ends first. */
  readonly outcome: Promise<CallOutcome>;
  /** Stops waiting and tells the server (`notifications/cancelled` for the upstream id). */
  cancel(reason: string): void;
}

interface Pending {
  sink: CallSink;
  /** May receive server→client requests (tools/call, prompts/get, resources/read). */
  inputCapable: boolean;
  token: Id | undefined;
  resolve(outcome: CallOutcome): void;
  reject(error: WireError): void;
}

export interface LegacyInstanceOptions {
  server: string;
  /** Not yet started: the instance starts it, and closing the instance closes it. */
  transport: Transport & { readonly pid?: number | undefined };
  clientInfo: Implementation;
  log: Logger;
  /** Called whenever the number of calls in flight changes (the pool's idle clock listens). */
  onActivity?: (inFlight: number) => void;
  /** Called once when the instance has ended, by its own exit or by `close`. */
  onEnded?: () => void;
}

export class LegacyInstance {
  readonly server: string;
  readonly #transport: LegacyInstanceOptions['transport'];
  readonly #log: Logger;
  readonly #options: LegacyInstanceOptions;
  readonly #pending = new Map<number, Pending>();
  /** Upstream progress token → upstream id of the call it belongs to. */
  readonly #tokens = new Map<string, number>();
  #nextId = 1;
  #initialize: InitializeResult | undefined;
  #ended: WireError | null = null;
  #failure: WireError | undefined;
  readonly #closed: Promise<void>;
  #resolveClosed!: () => void;

  private constructor(options: LegacyInstanceOptions) {
    this.server = options.server;
    this.#transport = options.transport;
    this.#log = options.log;
    this.#options = options;
    this.#closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  /** Launches the server and runs `initialize` + `notifications/initialized` on the agent's behalf. */
  static async start(options: LegacyInstanceOptions): Promise<LegacyInstance> {
    const instance = new LegacyInstance(options);
    await instance.#open();
    return instance;
  }

  /** The server's `initialize` result. */
  get initializeResult(): InitializeResult {
    return this.#initialize!;
  }

  get serverInfo(): Implementation {
    return this.#initialize!.serverInfo;
  }

  get pid(): number | undefined {
    return this.#transport.pid;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  /** True once the process has ended or the instance was closed. */
  get ended(): boolean {
    return this.#ended !== null;
  }

  /** Settles when the instance has ended. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Forwards one request under a fresh upstream id; see `Call`. */
  call(request: InstanceRequest, sink: CallSink): Call {
    const upstreamId = this.#nextId++;
    let settle!: Pick<Pending, 'resolve' | 'reject'>;
    const outcome = new Promise<CallOutcome>((resolve, reject) => (settle = { resolve, reject }));
    const call: Call = { upstreamId, outcome, cancel: (reason) => this.#cancel(upstreamId, reason) };
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
    this.#pending.set(upstreamId, { sink, token, inputCapable: INPUT_CAPABLE_METHODS.has(request.method), ...settle });
    this.#activity();
    const message = { jsonrpc: '2.0', id: upstreamId, method: request.method, ...(params !== undefined ? { params } : {}) } as JSONRPCMessage;
    this.#transport.send(message).catch((error: unknown) => {
      this.#settle(upstreamId)?.reject(error instanceof WireError ? error : this.#exitError());
    });
    return call;
  }

  /** Ends the process; calls in flight fail with `server-exited`. */
  async close(): Promise<void> {
    await this.#transport.close().catch(() => {});
    this.#end();
    await this.#closed;
  }

  async #open(): Promise<void> {
    const transport = this.#transport;
    let answerInitialize: ((message: JSONRPCMessage) => void) | undefined;
    transport.onmessage = (message) => {
      if (answerInitialize !== undefined && 'id' in message && message.id === 0 && !('method' in message)) answerInitialize(message);
      else this.#fromServer(message);
    };
    transport.onerror = (error) => {
      if (error instanceof WireError) this.#failure = error;
      this.#log.debug('Legacy instance transport error', { error });
    };
    transport.onclose = () => this.#end();
    await transport.start();
    const answered = new Promise<JSONRPCMessage>((resolve, reject) => {
      answerInitialize = resolve;
      void this.#closed.then(() => reject(this.#failure ?? this.#ended)); // a sandbox failure keeps its own reason
    });
    await transport.send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY_PROTOCOL_VERSION, capabilities: CLIENT_CAPABILITIES, clientInfo: this.#options.clientInfo },
    });
    const answer = await answered;
    answerInitialize = undefined;
    const parsed = 'result' in answer ? InitializeResultSchema.safeParse(answer.result) : undefined;
    if (parsed === undefined || !parsed.success) {
      await this.close();
      throw new WireError('launch-failed', `Server "${this.server}" did not accept initialize from the host: see the sidecar log`, { detail: { server: this.server } });
    }
    this.#initialize = parsed.data;
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  #fromServer(message: JSONRPCMessage): void {
    if ('method' in message && 'id' in message) return this.#serverRequest(message.id, message.method, message.params);
    if ('method' in message) return this.#notification(message.method, message.params as Record<string, unknown> | undefined);
    if (!('id' in message) || typeof message.id !== 'number') return;
    const pending = this.#settle(message.id);
    if (pending === undefined) return; // cancelled, or an answer to nothing
    if ('result' in message) pending.resolve({ result: message.result });
    else if ('error' in message) pending.resolve({ error: message.error as JsonRpcErrorShape });
  }

  #serverRequest(id: Id, method: string, params: unknown): void {
    let answered = false;
    const answer = (response: { result: unknown } | { error: JsonRpcErrorShape }) => {
      if (answered || this.#ended !== null) return;
      answered = true;
      this.#transport.send({ jsonrpc: '2.0', id, ...response } as JSONRPCMessage).catch(() => {});
    };
    const refuse = (code: number, message: string) => {
      this.#log.debug('Server request refused', { method: method.slice(0, 64), why: message });
      answer({ error: { code, message } });
    };
    if (!isInputMethod(method)) return refuse(-32601, `Method not found: ${method.slice(0, 64)}`);
    const capable = [...this.#pending.values()].filter((pending) => pending.inputCapable);
    if (capable.length === 1) {
      const input = capable[0]!.sink.input;
      if (input === undefined) return refuse(SERVER_REQUEST_REFUSED, `The request in flight cannot carry a question to the agent: ${method}`);
      input({ ...inputRequestOf(method, params), answer });
      return;
    }
    if (capable.length === 0 && method === 'roots/list') return answer({ result: { roots: [] } });
    if (capable.length === 0) return refuse(SERVER_REQUEST_REFUSED, `No request of the agent is in flight to ask: ${method}`);
    // A legacy stdio server's request names no call: with several in flight, whose it is cannot be known.
    refuse(SERVER_REQUEST_REFUSED, `Several requests of the agent are in flight on this server, so the host cannot tell which one asks: ${method}; retry when one is alone`);
  }

  #notification(method: string, params: Record<string, unknown> | undefined): void {
    if (method === 'notifications/progress') {
      const upstreamId = this.#tokens.get(String(params?.progressToken));
      const pending = upstreamId === undefined ? undefined : this.#pending.get(upstreamId);
      if (pending === undefined || pending.token === undefined) return;
      pending.sink.notify({ method, params: { ...params, progressToken: pending.token } });
      return;
    }
    if (method === 'notifications/message') {
      if (this.#pending.size !== 1) return; // which call it belongs to cannot be known
      const [pending] = this.#pending.values();
      if (pending!.sink.logLevel !== null && logLevelPasses(params?.level, pending!.sink.logLevel)) pending!.sink.notify({ method, ...(params ? { params } : {}) });
      return;
    }
    this.#log.debug('Server notification not relayed to modern agents yet', { method });
  }

  #cancel(upstreamId: number, reason: string): void {
    if (this.#settle(upstreamId) === undefined || this.#ended !== null) return;
    this.#transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason } }).catch(() => {});
  }

  /** Takes a call out of flight, returning it (undefined when it was not in flight). */
  #settle(upstreamId: number): Pending | undefined {
    const pending = this.#pending.get(upstreamId);
    if (pending === undefined) return undefined;
    this.#pending.delete(upstreamId);
    this.#tokens.delete(`switchyard-${upstreamId}`);
    this.#activity();
    return pending;
  }

  #activity(): void {
    if (this.#ended === null) this.#options.onActivity?.(this.#pending.size);
  }

  #exitError(): WireError {
    return this.#failure ?? new WireError('server-exited', `Server "${this.server}" closed its connection`, { detail: { server: this.server } });
  }

  #end(): void {
    if (this.#ended !== null) return;
    const error = this.#exitError();
    this.#ended = error.reason === 'server-exited' ? error : new WireError('server-exited', error.message, { detail: { server: this.server } });
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#tokens.clear();
    for (const call of pending) call.reject(this.#ended);
    this.#options.onEnded?.();
    this.#resolveClosed();
  }
}
