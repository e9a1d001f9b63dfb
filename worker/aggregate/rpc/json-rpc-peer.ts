/**
 * JsonRpcPeer: one end of a JSON-RPC conversation over an MCP SDK `Transport` (an agent's HTTP
 * session, a link channel, an in-memory pair), the part of the SDK's `Protocol` the aggregate
 * needs and nothing more: no schema parsing per message, since a gateway passes what it is given.
 *
 * - Requests it sends get its own ids (1, 2, 3, …), are answered by id, time out (a timer a
 *   progress notification may restart), and are cancelled with `notifications/cancelled` when
 *   their signal aborts or they time out. Ids start at 1, not at 0 as the SDK's do: the SDK's
 *   `Protocol` ignores a cancellation of request id 0 (it tests the id for truthiness), and so
 *   do servers that test a progress token so.
 * - Progress for a request it sent reaches that request's `onprogress`: the request carries its
 *   id as `_meta.progressToken`.
 * - Requests it receives go to one handler with a context: a signal the other side's
 *   `notifications/cancelled` aborts (a cancelled request is never answered, as the protocol
 *   says), and ways to send notifications and requests related to it. A handler's error becomes
 *   the error answer: its numeric `code` (else -32603), its message and its `data`. `ping` is
 *   answered here.
 * - When the transport closes, every request it sent fails with `ConnectionClosedError` (after
 *   `onclose`, so the owner knows why first) and every request it serves is aborted.
 *
 * `connect` keeps the transport's callbacks that were set before and calls them first, as the
 * SDK does, so a transport's owner can still watch it.
 *
 * @module
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { ConnectionClosedError, PeerCancellation, RequestCancelledError, RequestTimeoutError, RPC_CODES, RpcError } from './peer-errors.ts';
import { sameAuthor } from '../../../shared/audit/host-answers.ts';

export type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };
export type Result = Record<string, unknown>;

/** The SDK's own default: how long a request waits for its answer unless told otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

export interface IncomingRequest {
  id: RequestId;
  method: string;
  params?: Params;
}

export interface IncomingNotification {
  method: string;
  params?: Params;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /** Longest wait for the answer; default `DEFAULT_REQUEST_TIMEOUT_MS`. */
  timeoutMs?: number;
  /** A progress notification for this request starts the timeout over. */
  resetTimeoutOnProgress?: boolean;
  /** Progress for this request (its params without `progressToken`). */
  onprogress?: (progress: Params) => void;
  /** The incoming request this one is part of (the transport sends it on that request's stream). */
  relatedRequestId?: RequestId;
}

/** What a request handler gets besides the request. */
export interface RequestContext {
  id: RequestId;
  /** Aborted when the other side cancels the request or the transport closes. */
  signal: AbortSignal;
  /** What the transport said about the message (the HTTP request's headers, for one). */
  info: MessageExtraInfo | undefined;
  /** A notification related to this request; dropped once it is cancelled. */
  notify(method: string, params?: Params): Promise<void>;
  /** A request related to this request; refused once it is cancelled. */
  request(method: string, params: Params | undefined, options?: Omit<RequestOptions, 'relatedRequestId'>): Promise<Result>;
}

export interface PeerHandlers {
  request(request: IncomingRequest, context: RequestContext): Promise<Result> | Result;
  notification(notification: IncomingNotification): void;
}

interface Pending {
  resolve(result: Result): void;
  reject(error: unknown): void;
  onprogress: ((progress: Params) => void) | undefined;
  /** Restarts the timeout (progress); undefined unless the request asked for that. */
  restartTimeout: (() => void) | undefined;
  /** Clears the timer and the abort listener. */
  settle(): void;
}

export class JsonRpcPeer {
  /** The transport closed. */
  onclose?: () => void;
  /** Something went wrong that no request is waiting for (transport errors, stray messages). */
  onerror?: (error: Error) => void;
  readonly #handlers: PeerHandlers;
  #transport: Transport | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  readonly #serving = new Map<RequestId, AbortController>();

  constructor(handlers: PeerHandlers) {
    this.#handlers = handlers;
  }

  get connected(): boolean {
    return this.#transport !== undefined;
  }

  async connect(transport: Transport): Promise<void> {
    if (this.#transport !== undefined) throw new Error('The peer is already connected: use one peer per transport');
    this.#transport = transport;
    const { onclose, onerror, onmessage } = transport;
    transport.onclose = () => {
      onclose?.();
      this.#closed();
    };
    transport.onerror = (error) => {
      onerror?.(error);
      this.onerror?.(error);
    };
    transport.onmessage = (message, extra) => {
      onmessage?.(message, extra);
      this.#receive(message, extra);
    };
    await transport.start();
  }

  async close(): Promise<void> {
    await this.#transport?.close();
  }

  /** Sends a request; resolves to its result, rejects with one of `peer-errors.ts` or a send error. */
  request(method: string, params: Params | undefined, options: RequestOptions = {}): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      const transport = this.#transport;
      if (transport === undefined) return reject(new Error('Not connected'));
      const { signal, onprogress, relatedRequestId } = options;
      if (signal?.aborted) return reject(new RequestCancelledError(signal.reason));
      const id = this.#nextId++;
      const sent = onprogress === undefined ? params : { ...params, _meta: { ...params?._meta, progressToken: id } };
      const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
      const sendOptions: TransportSendOptions = relatedRequestId === undefined ? {} : { relatedRequestId };

      const cancel = (error: Error) => {
        if (!this.#pending.has(id)) return;
        this.#pending.get(id)!.settle();
        this.#pending.delete(id);
        transport
          .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: error.message } }, sendOptions)
          .catch((e: unknown) => this.onerror?.(new Error(`Failed to send a cancellation: ${String(e)}`)));
        reject(error);
      };
      const onTimeout = () => cancel(new RequestTimeoutError(timeoutMs));
      const onAbort = () => cancel(new RequestCancelledError(signal?.reason));
      let timer = setTimeout(onTimeout, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve,
        reject,
        onprogress,
        restartTimeout: options.resetTimeoutOnProgress === true
          ? () => {
            clearTimeout(timer);
            timer = setTimeout(onTimeout, timeoutMs);
          }
          : undefined,
        settle: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      });
      const message = { jsonrpc: '2.0', id, method, ...(sent !== undefined ? { params: sent } : {}) } as JSONRPCMessage;
      transport.send(message, sendOptions).catch((error: unknown) => {
        const pending = this.#pending.get(id);
        if (pending === undefined) return;
        pending.settle();
        this.#pending.delete(id);
        reject(error);
      });
    });
  }

  /** Sends a notification. */
  async notify(method: string, params?: Params, options: TransportSendOptions = {}): Promise<void> {
    const transport = this.#transport;
    if (transport === undefined) throw new Error('Not connected');
    await transport.send({ jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) } as JSONRPCMessage, options);
  }

  #receive(message: JSONRPCMessage, extra: MessageExtraInfo | undefined): void {
    const m = message as Record<string, unknown>;
    if ('result' in m || 'error' in m) this.#onResponse(m);
    else if (typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) {
      this.#onRequest({ id: m.id, method: m.method, ...(isObject(m.params) ? { params: m.params as Params } : {}) }, extra);
    } else if (typeof m.method === 'string') this.#onNotification({ method: m.method, ...(isObject(m.params) ? { params: m.params as Params } : {}) });
    else this.onerror?.(new Error(`Unknown message type: ${JSON.stringify(message).slice(0, 200)}`));
  }

  #onResponse(response: Record<string, unknown>): void {
    const id = Number(response.id);
    const pending = this.#pending.get(id);
    if (pending === undefined) {
      this.onerror?.(new Error(`Received a response for an unknown message ID: ${JSON.stringify(response.id)}`));
      return;
    }
    this.#pending.delete(id);
    pending.settle();
    if ('error' in response) {
      const error = (isObject(response.error) ? response.error : {}) as { code?: unknown; message?: unknown; data?: unknown };
      // An error a host marked as its own stays so on the RpcError it becomes, for the audit (`host-answers.ts`).
      pending.reject(sameAuthor(response, new RpcError(
        typeof error.code === 'number' ? error.code : RPC_CODES.internalError,
        typeof error.message === 'string' ? error.message : '',
        error.data,
      )));
    } else if (isObject(response.result) && !Array.isArray(response.result)) {
      pending.resolve(response.result as Result);
    } else {
      pending.reject(new Error('Invalid result: not an object'));
    }
  }

  #onNotification(notification: IncomingNotification): void {
    const params = notification.params;
    if (notification.method === 'notifications/cancelled') {
      const requestId = params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') this.#serving.get(requestId)?.abort(new PeerCancellation(params?.reason));
      return;
    }
    if (notification.method === 'notifications/progress') {
      const { progressToken, ...progress } = params ?? {};
      const pending = this.#pending.get(Number(progressToken));
      if (pending?.onprogress === undefined) {
        this.onerror?.(new Error(`Received a progress notification for an unknown token: ${JSON.stringify(progressToken)}`));
        return;
      }
      pending.restartTimeout?.();
      pending.onprogress(progress);
      return;
    }
    try {
      this.#handlers.notification(notification);
    } catch (error) {
      this.onerror?.(new Error(`Uncaught error in notification handler: ${String(error)}`));
    }
  }

  #onRequest(request: IncomingRequest, info: MessageExtraInfo | undefined): void {
    const transport = this.#transport;
    const controller = new AbortController();
    this.#serving.set(request.id, controller);
    const signal = controller.signal;
    const context: RequestContext = {
      id: request.id,
      signal,
      info,
      notify: async (method, params) => {
        if (signal.aborted) return;
        await this.notify(method, params, { relatedRequestId: request.id });
      },
      request: async (method, params, options = {}) => {
        if (signal.aborted) throw new ConnectionClosedError('Request was cancelled');
        return this.request(method, params, { ...options, relatedRequestId: request.id });
      },
    };
    const answer = request.method === 'ping' ? async () => ({}) : async () => this.#handlers.request(request, context);
    answer()
      .then(
        async (result) => {
          if (signal.aborted) return;
          await transport?.send({ jsonrpc: '2.0', id: request.id, result } as JSONRPCMessage);
        },
        async (error: unknown) => {
          if (signal.aborted) return;
          await transport?.send({ jsonrpc: '2.0', id: request.id, error: errorObjectOf(error) } as JSONRPCMessage);
        },
      )
      .catch((error: unknown) => this.onerror?.(new Error(`Failed to send a response: ${String(error)}`)))
      .finally(() => {
        if (this.#serving.get(request.id) === controller) this.#serving.delete(request.id);
      });
  }

  #closed(): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.settle();
    for (const controller of this.#serving.values()) controller.abort();
    this.#serving.clear();
    this.#transport = undefined;
    this.onclose?.();
    for (const p of pending) p.reject(new ConnectionClosedError());
  }
}

/** The error member of an answer to a handler that threw `error`, read as the SDK reads it. */
function errorObjectOf(error: unknown): { code: number; message: string; data?: unknown } {
  const e = (isObject(error) ? error : {}) as { code?: unknown; message?: unknown; data?: unknown };
  return {
    code: Number.isSafeInteger(e.code) ? (e.code as number) : RPC_CODES.internalError,
    message: typeof e.message === 'string' ? e.message : 'Internal error',
    ...(e.data !== undefined ? { data: e.data } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
