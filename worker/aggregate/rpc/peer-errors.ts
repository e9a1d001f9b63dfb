/**
 * What a `JsonRpcPeer` request can end with besides a result, one class per cause, so callers
 * branch on the class and never on a code that a server may also use:
 *
 * - `RpcError`: the other side answered with a JSON-RPC error (code, message and data exactly as
 *   sent); a request handler also throws one to answer with exactly that error;
 * - `RequestTimeoutError`: no answer within the request's timeout (the peer has cancelled it);
 * - `RequestCancelledError`: the caller's signal aborted the request (the peer has cancelled it);
 * - `ConnectionClosedError`: the transport closed before the answer came.
 *
 * The codes are the JSON-RPC and MCP ones the MCP SDK uses, so answers built from these errors
 * carry the same codes as when the aggregate was built on the SDK.
 *
 * @module
 */

export const RPC_CODES = {
  connectionClosed: -32000,
  requestTimeout: -32001,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

/** A JSON-RPC error answer, received from the other side or to be sent to it. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`Request timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

export class RequestCancelledError extends Error {
  override readonly name = 'RequestCancelledError';
  /** The signal aborted because the other side cancelled the request it was serving (`PeerCancellation`), not because the peer closed. */
  readonly byPeer: boolean;

  constructor(reason: unknown) {
    super(reason instanceof PeerCancellation ? reason.message : String(reason));
    this.byPeer = reason instanceof PeerCancellation;
  }
}

/** What a served request's signal aborts with when the other side sends `notifications/cancelled` for it. */
export class PeerCancellation extends Error {
  override readonly name = 'PeerCancellation';

  constructor(reason: unknown) {
    super(typeof reason === 'string' ? reason : 'Cancelled by the requester');
  }
}

export class ConnectionClosedError extends Error {
  override readonly name = 'ConnectionClosedError';

  constructor(message = 'Connection closed') {
    super(message);
  }
}
