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
 *   it goes to the one a request is attached to (parked ones, waiting for a retry that may never
 *   come, asked theirs already); with several of those it cannot be attributed and is refused with
 *   an error (notes §4 "Correlation hazard"); with none,
 *   `roots/list` gets an empty list (server-everything asks right after `initialized`) and the others
 *   an error;
 * - change notifications (`list_changed`, `resources/updated`) go to the agent's open listen
 *   streams (`listeners`, `listen-stream.ts`), which keep the instance from idling out; a
 *   `tools/list_changed` also makes the host's cached tool list stale (`toolListVersion`);
 * - the process ending fails every request in flight with `server-exited` (its exit reason when
 *   the transport gave one), and the instance is done: the pool starts a fresh one next time.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../../shared/errors.ts';
import { holdReadingOf } from '../../../shared/link/link-flow.ts';
import type { Logger } from '../../log.ts';
import { InFlightCalls, type Call, type CallSink, type InstanceRequest } from './in-flight-calls.ts';
import { ListenerSet } from './listener-set.ts';

export type { Call, CallOutcome, CallSink, InstanceRequest, ServerRequest } from './in-flight-calls.ts';
import { inputRequestOf, isInputMethod } from '../../../shared/era-bridge/input-requests.ts';
import { initializeResultSchema, logLevelPasses, type Implementation, type InitializeResult, type JsonRpcErrorShape } from './modern-results.ts';

/** The legacy revision the host negotiates (the latest the SDK speaks). */
export const LEGACY_PROTOCOL_VERSION = '2025-11-25';

/** What the host declares at `initialize`: everything a modern agent may answer through MRTR. */
export const CLIENT_CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} } as const;

type Id = string | number;

/** How long the host waits for the answer to its `initialize` before it ends the server (the warm pool waits as long). */
export const HOST_INITIALIZE_TIMEOUT_MS = 30_000;

/** Error code for a server→client request the host cannot route to a caller. */
const SERVER_REQUEST_REFUSED = -32603;

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
  /** Default {@link HOST_INITIALIZE_TIMEOUT_MS}. */
  initializeTimeoutMs?: number;
  /** Aborted when the host stops: a start still waiting for `initialize` ends its server and fails with `host-offline`. */
  signal?: AbortSignal;
}

export class LegacyInstance {
  readonly server: string;
  readonly #transport: LegacyInstanceOptions['transport'];
  readonly #log: Logger;
  readonly #options: LegacyInstanceOptions;
  readonly #calls: InFlightCalls;
  #initialize: InitializeResult | undefined;
  /** Counts the server's `notifications/tools/list_changed`: a cached tool list read at another count is stale. */
  toolListVersion = 0;
  /** The agent's open listen streams on this instance (`listen-stream.ts`); each keeps it from idling out. */
  readonly listeners: ListenerSet;

  private constructor(options: LegacyInstanceOptions) {
    this.server = options.server;
    this.#transport = options.transport;
    this.#log = options.log;
    this.#options = options;
    this.#calls = new InFlightCalls({ ...options, onActivity: () => options.onActivity?.(this.inFlight) });
    this.listeners = new ListenerSet(() => options.onActivity?.(this.inFlight));
    // One reaction for every listen stream: each leaves the set when it closes, so none outlives its stream.
    void this.#calls.closed.then(() => this.listeners.end(this.#calls.closedByHost));
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

  /** Calls in flight plus open listen streams: what keeps the instance from idling out. */
  get inFlight(): number {
    return this.#calls.size + this.listeners.size;
  }

  /** True once the process has ended or the instance was closed. */
  get ended(): boolean {
    return this.#calls.ended !== null;
  }

  /** Settles when the instance has ended. */
  get closed(): Promise<void> {
    return this.#calls.closed;
  }

  /** Holds back the process's output while a channel it serves is held (`shared/link/link-flow.ts`). */
  holdReading(): () => void {
    return holdReadingOf(this.#transport);
  }

  /** Forwards one request under a fresh upstream id; see `Call`. */
  call(request: InstanceRequest, sink: CallSink): Call {
    return this.#calls.start(request, sink);
  }

  /** Ends the process; calls in flight fail with `server-exited`. */
  close(): Promise<void> {
    return this.#calls.close();
  }

  async #open(): Promise<void> {
    const transport = this.#transport;
    let answerInitialize: ((message: JSONRPCMessage) => void) | undefined;
    this.#calls.wire((message) => {
      if (answerInitialize !== undefined && 'id' in message && message.id === 0 && !('method' in message)) answerInitialize(message);
      else this.#fromServer(message);
    });
    await transport.start();
    const { signal } = this.#options;
    const timeoutMs = this.#options.initializeTimeoutMs ?? HOST_INITIALIZE_TIMEOUT_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopping: (() => void) | undefined;
    const answered = new Promise<JSONRPCMessage>((resolve, reject) => {
      answerInitialize = resolve;
      void this.#calls.closed.then(() => reject(this.#calls.failure ?? this.#calls.ended)); // a sandbox failure keeps its own reason
      // A server that never answers would hold every request of the agent to it, and its budget slot, for good.
      timer = setTimeout(
        () => reject(new WireError('request-timeout', `Server "${this.server}" did not answer the host's initialize within ${timeoutMs / 1000} s: it was ended`, { detail: { server: this.server } })),
        timeoutMs,
      );
      stopping = () => reject(new WireError('host-offline', 'This host is stopping: it starts no new server processes'));
      if (signal?.aborted === true) stopping();
      else signal?.addEventListener('abort', stopping, { once: true });
    });
    // A send that fails leaves it unawaited, to be rejected when the close below ends the calls.
    answered.catch(() => {});
    let answer: JSONRPCMessage;
    try {
      await transport.send({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: LEGACY_PROTOCOL_VERSION, capabilities: CLIENT_CAPABILITIES, clientInfo: this.#options.clientInfo },
      });
      answer = await answered;
    } catch (error) {
      await this.close();
      throw error;
    } finally {
      clearTimeout(timer);
      if (stopping !== undefined) signal?.removeEventListener('abort', stopping);
    }
    answerInitialize = undefined;
    const parsed = 'result' in answer ? initializeResultSchema().safeParse(answer.result) : undefined;
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
    const pending = this.#calls.settle(message.id);
    if (pending === undefined) return; // cancelled, or an answer to nothing
    if ('result' in message) pending.resolve({ result: message.result });
    else if ('error' in message) pending.resolve({ error: message.error as JsonRpcErrorShape });
  }

  #serverRequest(id: Id, method: string, params: unknown): void {
    let answered = false;
    const answer = (response: { result: unknown } | { error: JsonRpcErrorShape }) => {
      if (answered) return;
      answered = true;
      this.#calls.send({ jsonrpc: '2.0', id, ...response } as JSONRPCMessage);
    };
    const refuse = (code: number, message: string) => {
      this.#log.debug('Server request refused', { method: method.slice(0, 64), why: message });
      answer({ error: { code, message } });
    };
    if (!isInputMethod(method)) return refuse(-32601, `Method not found: ${method.slice(0, 64)}`);
    let capable = [...this.#calls.values()].filter((pending) => pending.inputCapable);
    // A parked call asked its questions already and waits for the agent, who may never retry (an
    // abandoned dialog): it must not make the instance's next call unaskable until it expires.
    if (capable.length > 1) {
      const attached = capable.filter((pending) => pending.sink.parked !== true);
      if (attached.length > 0) capable = attached;
    }
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
    if (method === 'notifications/progress') return this.#calls.progress(params);
    if (method === 'notifications/message') {
      const alone = this.#calls.alone(); // with several in flight, which call it belongs to cannot be known
      if (alone !== undefined && alone.sink.logLevel !== null && logLevelPasses(params?.level, alone.sink.logLevel)) alone.sink.notify({ method, ...(params ? { params } : {}) });
      return;
    }
    if (method === 'notifications/tools/list_changed') this.toolListVersion += 1;
    this.listeners.dispatch(method, params); // change notifications go to the agent's listen streams
  }}
