/**
 * The error answers of the modern (2026-07-28) front door, each with the spec's code, HTTP status
 * and `data` fields, plus the Switchyard `data.reason` every error body carries (DESIGN §4). Every
 * answer echoes the request's id (null only when the body had none to read).
 *
 * Codes (schema.ts): -32020 `HeaderMismatch`, -32021 `MissingRequiredClientCapability`, -32022
 * `UnsupportedProtocolVersion`; JSON-RPC's own -32602 (invalid params: a malformed `_meta`), -32601
 * (a method the server does not serve, HTTP 404) and -32600 (not one JSON-RPC request).
 *
 * @module
 */
import type { FailureReason } from '../../shared/errors.ts';
import { SUPPORTED_MODERN_VERSIONS } from './headers.ts';

export const HEADER_MISMATCH = -32020;
export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
export const INVALID_PARAMS = -32602;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_REQUEST = -32600;

/** One refusal: what goes in the JSON-RPC error, and the HTTP status it travels with. */
export interface ModernRejection {
  status: number;
  code: number;
  message: string;
  data: Record<string, unknown> & { reason: FailureReason };
}

export const headerMismatch = (detail: string): ModernRejection => ({
  status: 400, code: HEADER_MISMATCH, message: `Header mismatch: ${detail}`, data: { reason: 'invalid-request' },
});

export const invalidMeta = (detail: string): ModernRejection => ({
  status: 400, code: INVALID_PARAMS, message: `Invalid params: ${detail}`, data: { reason: 'invalid-request' },
});

export const unsupportedVersion = (requested: string): ModernRejection => ({
  status: 400,
  code: UNSUPPORTED_PROTOCOL_VERSION,
  message: `Unsupported protocol version: ${requested.slice(0, 64)}; this server speaks ${SUPPORTED_MODERN_VERSIONS.join(', ')} (and the session-based versions through initialize)`,
  data: { supported: [...SUPPORTED_MODERN_VERSIONS], requested: requested.slice(0, 64), reason: 'invalid-request' },
});

export const missingCapability = (requiredCapabilities: Record<string, unknown>): ModernRejection => ({
  status: 400,
  code: MISSING_REQUIRED_CLIENT_CAPABILITY,
  message: `Missing required client capability: ${Object.keys(requiredCapabilities).join(', ')}`,
  data: { requiredCapabilities, reason: 'invalid-request' },
});

export const methodNotFound = (method: string, why: 'unknown' | 'removed' | 'not-yet'): ModernRejection => ({
  status: 404,
  code: METHOD_NOT_FOUND,
  message: why === 'removed'
    ? `Method not found: ${method.slice(0, 64)} was removed in protocol version 2026-07-28`
    : why === 'not-yet'
      ? `Method not found: ${method} is not supported yet by Switchyard`
      : `Method not found: ${method.slice(0, 64)}`,
  data: { reason: 'invalid-request' },
});

export const invalidRequest = (detail: string): ModernRejection => ({
  status: 400, code: INVALID_REQUEST, message: `Invalid request: ${detail}`, data: { reason: 'invalid-request' },
});

/** The JSON-RPC error body of a rejection. */
export function rejectionBody(id: string | number | null, rejection: ModernRejection): unknown {
  return { jsonrpc: '2.0', id, error: { code: rejection.code, message: rejection.message, data: rejection.data } };
}

/** The HTTP answer of a rejection: JSON, its status, never a session id. */
export function rejectionResponse(id: string | number | null, rejection: ModernRejection): Response {
  return Response.json(rejectionBody(id, rejection), { status: rejection.status });
}

/**
 * The HTTP status for a JSON-RPC error a server sent back: the modern errors the spec pins to 400
 * keep it, and a method the server does not implement is 404, as the transport asks of whoever
 * answers the agent (a legacy server's -32601 as much as a modern one's); anything else is an
 * answer to the request, 200.
 */
export function statusForUpstreamError(code: unknown): number {
  if (code === METHOD_NOT_FOUND) return 404;
  return code === HEADER_MISMATCH || code === MISSING_REQUIRED_CLIENT_CAPABILITY || code === UNSUPPORTED_PROTOCOL_VERSION ? 400 : 200;
}
