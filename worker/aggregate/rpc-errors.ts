/**
 * JSON-RPC errors on the aggregate endpoint: what an upstream answered must reach the agent with
 * the same code, message and data (in particular `data.reason`), and Switchyard's own failures
 * must carry their stable reason.
 *
 * A request handler answers with the code, message and data of what it throws (see
 * `rpc/json-rpc-peer.ts`), so throwing an `RpcError` sends exactly those.
 *
 * @module
 */
import { WireError, type FailureReason } from '../../shared/errors.ts';
import { ConnectionClosedError, RequestCancelledError, RequestTimeoutError, RPC_CODES, RpcError } from './rpc/peer-errors.ts';

/** The same failure as a JSON-RPC error with `data.reason`. */
export function fromWireError(error: WireError): RpcError {
  const body = error.toJsonRpcError();
  return new RpcError(body.code, body.message, body.data);
}

export interface UpstreamFailure {
  reason: FailureReason;
  message: string;
}

/**
 * Maps what an upstream request rejected with to what the agent receives:
 * - an upstream JSON-RPC error: unchanged (code, message, data);
 * - no answer in time: reason `request-timeout`;
 * - the connection closing under the request: the upstream's failure reason (`server-exited`,
 *   `host-offline`, …) once it is known, else -32000 "Connection closed";
 * - the agent's own cancellation: -32001 with the reason (the agent is not answered then; the
 *   audit record keeps it);
 * - anything else: `server-exited`, since the request cannot have been answered.
 */
export function toAgentError(server: string, error: unknown, failure: () => UpstreamFailure | undefined): Error {
  if (error instanceof RpcError) return error;
  if (error instanceof WireError) return fromWireError(error);
  if (error instanceof RequestTimeoutError) {
    return fromWireError(new WireError('request-timeout', `Server "${server}" did not answer within ${error.timeoutMs} ms`));
  }
  if (error instanceof RequestCancelledError) return new RpcError(RPC_CODES.requestTimeout, error.message);
  const known = failure();
  if (error instanceof ConnectionClosedError) {
    return known !== undefined
      ? fromWireError(new WireError(known.reason, `Server "${server}" disconnected: ${known.message}`))
      : new RpcError(RPC_CODES.connectionClosed, error.message);
  }
  return fromWireError(new WireError(known?.reason ?? 'server-exited', `Server "${server}" could not answer: ${known?.message ?? 'connection lost'}`));
}

/**
 * Maps what a request to the agent rejected with to the answer its upstream gets, with the codes
 * the SDK gave these cases: the agent's own error unchanged, -32001 for no answer in time (with
 * `data.timeout`) or a cancellation, -32000 for the agent's session ending.
 */
export function toUpstreamError(error: unknown): unknown {
  if (error instanceof RequestTimeoutError) return new RpcError(RPC_CODES.requestTimeout, 'Request timed out', { timeout: error.timeoutMs });
  if (error instanceof RequestCancelledError) return new RpcError(RPC_CODES.requestTimeout, error.message);
  if (error instanceof ConnectionClosedError) return new RpcError(RPC_CODES.connectionClosed, error.message);
  return error;
}
