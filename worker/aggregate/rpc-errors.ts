/**
 * JSON-RPC errors on the aggregate endpoint: what an upstream answered must reach the agent with
 * the same code, message and data (in particular `data.reason`), and Switchyard's own failures
 * must carry their stable reason.
 *
 * The SDK's `Protocol` answers a throwing handler with `{code, message, data}` read off the thrown
 * value, so throwing a `ForwardedRpcError` sends exactly those. The SDK's `McpError` prefixes its
 * message with `MCP error <code>: `; that prefix is taken off again so messages do not grow at
 * every hop.
 *
 * @module
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { WireError, type FailureReason } from '../../shared/errors.ts';

/** An error a request handler throws to answer with this exact JSON-RPC error. */
export class ForwardedRpcError extends Error {
  override readonly name = 'ForwardedRpcError';
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/** The same failure as a JSON-RPC error with `data.reason`. */
export function fromWireError(error: WireError): ForwardedRpcError {
  const body = error.toJsonRpcError();
  return new ForwardedRpcError(body.code, body.message, body.data);
}

/** Strips the `MCP error <code>: ` prefix the SDK adds when it builds an `McpError`. */
export function originalMessage(error: McpError): string {
  return error.message.replace(/^MCP error -?\d+: /, '');
}

export interface UpstreamFailure {
  reason: FailureReason;
  message: string;
}

/**
 * The SDK's own local timeout (code -32001 with a numeric `data.timeout`), as opposed to a server
 * that answered with that code: the one test for it. Returns the timeout in ms, or undefined.
 */
export function sdkTimeoutMs(error: unknown): number | undefined {
  if (!(error instanceof McpError) || error.code !== ErrorCode.RequestTimeout) return undefined;
  const timeout = (error.data as { timeout?: unknown } | undefined)?.timeout;
  return typeof timeout === 'number' ? timeout : undefined;
}

/**
 * Maps what `client.request` threw to what the agent receives:
 * - an upstream JSON-RPC error: unchanged (code, message, data);
 * - the SDK's local timeout (code -32001 with `data.timeout`): reason `request-timeout`;
 * - the connection closing under the request (code -32000 once the upstream is known to have
 *   failed): the upstream's failure reason (`server-exited`, `host-offline`, …);
 * - anything else: `server-exited`, since the request cannot have been answered.
 *
 * The SDK's local codes overlap codes servers use, so they are told apart by shape, never by text.
 */
export function toAgentError(server: string, error: unknown, failure: () => UpstreamFailure | undefined): Error {
  if (error instanceof ForwardedRpcError) return error;
  if (error instanceof WireError) return fromWireError(error);
  if (error instanceof McpError) {
    const timeout = sdkTimeoutMs(error);
    if (timeout !== undefined) return fromWireError(new WireError('request-timeout', `Server "${server}" did not answer within ${timeout} ms`));
    const known = failure();
    if (error.code === ErrorCode.ConnectionClosed && error.data === undefined && known !== undefined) {
      return fromWireError(new WireError(known.reason, `Server "${server}" disconnected: ${known.message}`));
    }
    return new ForwardedRpcError(error.code, originalMessage(error), error.data);
  }
  const known = failure();
  return fromWireError(new WireError(known?.reason ?? 'server-exited', `Server "${server}" could not answer: ${known?.message ?? 'connection lost'}`));
}
