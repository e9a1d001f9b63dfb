/**
 * The two error families of Switchyard.
 *
 * `WireError` crosses a boundary (HTTP body, JSON-RPC error, link frame): it carries a stable
 * `reason` from DESIGN §4 and the JSON-RPC code that goes with it. `LocalError` stays inside one
 * process and carries a string code. Callers branch on `reason` / `code`, never on message text.
 *
 * @module
 */

/** Stable failure reasons, as they appear in `error.data.reason` and HTTP error bodies. */
export const FAILURE_REASONS = [
  'unauthorized',
  'server-not-found',
  'host-offline',
  'unsupported-policy',
  'trust-profile-not-found',
  'trust-profile-stale',
  'containment-unavailable',
  'launch-failed',
  'server-exited',
  'denied-by-policy',
  'invalid-request',
  'request-timeout',
  'limit-reached',
  'config-changed',
  'shutdown',
] as const;

export type FailureReason = (typeof FAILURE_REASONS)[number];

/**
 * JSON-RPC error code per reason: -32600 for a malformed request, the rest in the server range,
 * but for `server-not-found`. It was -32002, which MCP defines as "resource not found" up to
 * 2025-11-25 and which a 2026-07-28 implementation must not emit at all (basic/index, Error
 * Codes); its code is one outside JSON-RPC's reserved range, where the spec asks new ones to go.
 * The stable contract is `data.reason` either way.
 */
const JSON_RPC_CODES: Record<FailureReason, number> = {
  'invalid-request': -32600,
  'unauthorized': -32001,
  'server-not-found': -31002,
  'host-offline': -32003,
  'unsupported-policy': -32004,
  'trust-profile-not-found': -32005,
  'trust-profile-stale': -32006,
  'containment-unavailable': -32007,
  'launch-failed': -32008,
  'server-exited': -32009,
  'denied-by-policy': -32010,
  'request-timeout': -32011,
  'limit-reached': -32012,
  'config-changed': -32013,
  'shutdown': -32014,
};

const HTTP_STATUS: Record<FailureReason, number> = {
  'invalid-request': 400,
  'unauthorized': 401,
  'denied-by-policy': 403,
  'unsupported-policy': 403,
  'server-not-found': 404,
  'trust-profile-not-found': 409,
  'trust-profile-stale': 409,
  'launch-failed': 502,
  'server-exited': 502,
  'host-offline': 503,
  'containment-unavailable': 503,
  'request-timeout': 504,
  'limit-reached': 429,
  'config-changed': 409,
  'shutdown': 503,
};

export function isFailureReason(value: unknown): value is FailureReason {
  return typeof value === 'string' && (FAILURE_REASONS as readonly string[]).includes(value);
}

export function jsonRpcCodeFor(reason: FailureReason): number {
  return JSON_RPC_CODES[reason];
}

export function httpStatusFor(reason: FailureReason): number {
  return HTTP_STATUS[reason];
}

/** Extra, non-secret facts attached to a wire error (exit code, server name, …). */
export type WireErrorDetail = Record<string, string | number | boolean | null>;

/** An error that may cross a process or network boundary. Its message must never hold secrets. */
export class WireError extends Error {
  override readonly name = 'WireError';
  readonly reason: FailureReason;
  readonly detail: WireErrorDetail;

  constructor(reason: FailureReason, message: string, options?: { detail?: WireErrorDetail; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.detail = options?.detail ?? {};
  }

  get code(): number {
    return jsonRpcCodeFor(this.reason);
  }

  /** The `error` member of a JSON-RPC error response. */
  toJsonRpcError(): JsonRpcErrorObject {
    return { code: this.code, message: this.message, data: { ...this.detail, reason: this.reason } };
  }

  /** The JSON body of an HTTP error response. */
  toHttpBody(): { error: { reason: FailureReason; message: string } & WireErrorDetail } {
    return { error: { ...this.detail, reason: this.reason, message: this.message } };
  }
}

/** An error that stays in one process; `code` is a stable string such as `'invalid-config'`. */
export class LocalError extends Error {
  override readonly name: string = 'LocalError';
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data: { reason: FailureReason } & WireErrorDetail;
}

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  error: JsonRpcErrorObject;
}

/** The one builder of JSON-RPC error bodies: every error response in Switchyard comes from here. */
export function jsonRpcErrorBody(id: string | number | null, error: WireError): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: error.toJsonRpcError() };
}

/** Reads the reason back out of a JSON-RPC error object received from a peer, if it has one. */
export function reasonOf(error: unknown): FailureReason | undefined {
  if (error instanceof WireError) return error.reason;
  if (typeof error !== 'object' || error === null) return undefined;
  const data = (error as { data?: unknown }).data;
  if (typeof data !== 'object' || data === null) return undefined;
  const reason = (data as { reason?: unknown }).reason;
  return isFailureReason(reason) ? reason : undefined;
}
