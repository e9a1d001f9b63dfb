/**
 * PassthroughSession: one agent session of `/servers/:name/mcp`, bridged raw to one upstream
 * channel. The agent faces an SDK `WebStandardStreamableHTTPServerTransport` (sessions, SSE,
 * resumable framing done by the SDK); every JSON-RPC message is passed on unchanged both ways, so
 * the agent sees the server exactly as it is, including its own `initialize` result.
 *
 * The one decision this file makes is which SSE stream a server→client message travels on:
 * - responses: by their id (the transport does this);
 * - `notifications/progress`: the stream of the request that carried that progress token;
 * - other notifications and server requests (logging, sampling, elicitation, roots): the stream of
 *   the most recent agent request still in flight (a server sends these while handling a
 *   request), else the standalone GET stream.
 *
 * When the upstream channel ends (host offline, server exited), every request still in flight gets
 * a JSON-RPC error carrying `data.reason`, and the session closes: the agent must initialize again.
 *
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isJSONRPCErrorResponse, isJSONRPCRequest, isJSONRPCResultResponse } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import type { ChannelCloseInfo, MessageChannel } from '../../shared/message-channel.ts';
import type { WorkerLogger } from '../log.ts';
import type { AgentSession } from './session-table.ts';

export interface PassthroughSessionOptions {
  id: string;
  agent: string;
  server: string;
  channel: MessageChannel;
  log: WorkerLogger;
  /** Called once when the session has closed, for whatever reason. */
  onClosed: (session: PassthroughSession) => void;
}

export class PassthroughSession implements AgentSession {
  readonly id: string;
  readonly agent: string;
  readonly route: string;
  readonly servers: readonly string[];
  readonly #server: string;
  readonly #channel: MessageChannel;
  readonly #transport: WebStandardStreamableHTTPServerTransport;
  readonly #log: WorkerLogger;
  readonly #onClosed: (session: PassthroughSession) => void;
  /** Agent requests awaiting the server's response, oldest first. */
  readonly #inFlight = new Map<RequestId, true>();
  readonly #progress = new Map<string | number, RequestId>();
  #closed = false;

  constructor(options: PassthroughSessionOptions) {
    this.id = options.id;
    this.agent = options.agent;
    this.#server = options.server;
    this.route = `server:${options.server}`;
    this.servers = [options.server];
    this.#channel = options.channel;
    this.#log = options.log.child({ session: options.id, server: options.server });
    this.#onClosed = options.onClosed;
    this.#transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => options.id,
      onsessionclosed: () => this.close('closed by the agent'),
    });
    this.#transport.onmessage = (message) => this.#fromAgent(message);
    this.#transport.onclose = () => void this.close('transport closed');
    this.#channel.onmessage = (message) => this.#fromServer(message);
    this.#channel.onclose = (info) => void this.#upstreamClosed(info);
    this.#channel.start();
  }

  get channelCount(): number {
    return this.#channel.closed ? 0 : 1;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  handle(request: Request, parsedBody?: unknown): Promise<Response> {
    return this.#transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody });
  }

  async close(why = 'closed'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#log.debug('Passthrough session closing', { why });
    this.#onClosed(this);
    await this.#channel.close().catch(() => {});
    await this.#transport.close().catch(() => {});
  }

  #fromAgent(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      this.#inFlight.set(message.id, true);
      const token = (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
      if (typeof token === 'string' || typeof token === 'number') this.#progress.set(token, message.id);
    }
    this.#channel.send(message).catch((error: unknown) => {
      if (!isJSONRPCRequest(message)) return;
      const wire = error instanceof WireError ? error : new WireError('server-exited', `Server "${this.#server}" is no longer connected`);
      this.#answer(message.id, wire);
    });
  }

  #fromServer(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      if (message.id !== undefined) this.#settle(message.id);
      this.#transport.send(message).catch((error: unknown) => this.#log.debug('Response not delivered: the agent left', { error }));
      return;
    }
    const related = this.#relatedRequest(message);
    const send = related === undefined ? this.#transport.send(message) : this.#transport.send(message, { relatedRequestId: related });
    send.catch(() => this.#transport.send(message)).catch((error: unknown) => this.#log.debug('Server message not delivered', { error }));
  }

  #relatedRequest(message: JSONRPCMessage): RequestId | undefined {
    if (!('method' in message)) return undefined;
    if (message.method === 'notifications/progress') {
      const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
      const id = typeof token === 'string' || typeof token === 'number' ? this.#progress.get(token) : undefined;
      if (id !== undefined && this.#inFlight.has(id)) return id;
    }
    let latest: RequestId | undefined;
    for (const id of this.#inFlight.keys()) latest = id;
    return latest;
  }

  #settle(id: RequestId): void {
    this.#inFlight.delete(id);
    for (const [token, requestId] of this.#progress) if (requestId === id) this.#progress.delete(token);
  }

  #answer(id: RequestId, error: WireError): Promise<void> {
    this.#settle(id);
    return this.#transport.send(jsonRpcErrorBody(id, error) as JSONRPCMessage).catch(() => {});
  }

  async #upstreamClosed(info: ChannelCloseInfo): Promise<void> {
    if (this.#closed) return;
    const error = new WireError(
      info.reason ?? 'server-exited',
      `Server "${this.#server}" ended the session${info.message !== undefined ? `: ${info.message}` : ''}; initialize a new session to retry`,
    );
    this.#log.info('Upstream channel closed', { reason: error.reason });
    await Promise.all([...this.#inFlight.keys()].map((id) => this.#answer(id, error)));
    await this.close('upstream closed');
  }
}
