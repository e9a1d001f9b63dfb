/**
 * Validates one modern POST body against its headers, in the order the conformance suite implies
 * (notes §1 "Validation order"): the JSON-RPC envelope, then the required `_meta` (-32602), the
 * version header against `_meta` (-32020), the version itself (-32022), `Mcp-Method` and
 * `Mcp-Name` (-32020), the method set (404, -32601), and last `logLevel` (-32602).
 *
 * Not checked here: `Mcp-Param-*` against a tool's `x-mcp-header` properties, which needs the
 * tool's `inputSchema`: the worker only decodes those headers (`param-headers.ts`) and the host
 * checks them against the tool list it caches. Capabilities (-32021) are the host's to judge too,
 * since only it knows what the server asks for.
 *
 * @module
 */
import { decodeHeaderValue, METHOD_HEADER, plainHeaderValue, NAME_HEADER, protocolVersionHeader, SUPPORTED_MODERN_VERSIONS } from './headers.ts';
import { methodSupport } from './methods.ts';
import { isRecord } from '../../shared/records.ts';
import {
  headerMismatch, invalidMeta, invalidRequest, methodNotFound, unsupportedVersion, type ModernRejection,
} from './modern-errors.ts';
import { logLevelProblem, parseRequestMeta, PROTOCOL_VERSION_KEY, type RequestMeta } from './request-meta.ts';

export interface ModernRequest {
  jsonrpc: '2.0';
  id: string | number;
  method: string;
  params?: Record<string, unknown>;
}

export type Validation =
  | { kind: 'request'; request: ModernRequest; meta: RequestMeta }
  | { kind: 'notification' }
  | { kind: 'rejected'; id: string | number | null; rejection: ModernRejection };

export function validateModernRequest(body: unknown, headers: Headers): Validation {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { kind: 'rejected', id: null, rejection: invalidRequest('a modern POST carries exactly one JSON-RPC message, not a batch') };
  }
  const message = body as Record<string, unknown>;
  const rawId = message.id;
  // A safe integer, as the SDK's schemas take one: past 2^53 the number is not the id that was sent.
  const id = typeof rawId === 'string' || Number.isSafeInteger(rawId) ? (rawId as string | number) : null;
  const reject = (rejection: ModernRejection): Validation => ({ kind: 'rejected', id, rejection });
  if (message.jsonrpc !== '2.0' || typeof message.method !== 'string') {
    return reject(invalidRequest('expected a JSON-RPC 2.0 request ("jsonrpc": "2.0", a string "method")'));
  }
  if (rawId === undefined) return { kind: 'notification' };
  if (id === null) return reject(invalidRequest('the request id must be a string or a safe integer'));
  const rawParams = message.params;
  if (rawParams !== undefined && (typeof rawParams !== 'object' || rawParams === null || Array.isArray(rawParams))) {
    return reject(invalidMeta('params must be an object'));
  }
  const params = rawParams as Record<string, unknown> | undefined;
  const method = message.method;

  const meta = parseRequestMeta(params);
  const headerVersion = protocolVersionHeader(headers);
  if (!meta.ok) {
    // A header naming no version this worker speaks (a typo, a legacy client's guess) sent this
    // request down the modern path: that is what to say, not that its modern _meta is missing.
    if (headerVersion !== undefined && !SUPPORTED_MODERN_VERSIONS.includes(headerVersion)) return reject(unsupportedVersion(headerVersion));
    return reject(invalidMeta(meta.problem));
  }
  const bodyVersion = meta.meta[PROTOCOL_VERSION_KEY];
  if (headerVersion === undefined) return reject(headerMismatch('the MCP-Protocol-Version header is missing'));
  if (headerVersion !== bodyVersion) {
    return reject(headerMismatch(`MCP-Protocol-Version header value '${headerVersion.slice(0, 64)}' does not match body value '${bodyVersion.slice(0, 64)}'`));
  }
  if (!SUPPORTED_MODERN_VERSIONS.includes(bodyVersion)) return reject(unsupportedVersion(bodyVersion));

  const methodHeader = headers.get(METHOD_HEADER);
  if (methodHeader === null) return reject(headerMismatch('the Mcp-Method header is missing'));
  const headerMethod = plainHeaderValue(methodHeader);
  if (!headerMethod.ok) return reject(headerMismatch(`the Mcp-Method header is malformed: ${headerMethod.problem}`));
  if (headerMethod.value !== method) {
    return reject(headerMismatch(`Mcp-Method header value '${headerMethod.value.slice(0, 64)}' does not match body value '${method.slice(0, 64)}'`));
  }
  const support = methodSupport(method);
  if (support.kind === 'served' && support.name !== undefined) {
    const field = support.name;
    const bodyName = params?.[field];
    const nameHeader = headers.get(NAME_HEADER);
    if (nameHeader === null) return reject(headerMismatch(`the Mcp-Name header is missing: ${method} mirrors params.${field} into it`));
    const headerName = decodeHeaderValue(nameHeader);
    if (!headerName.ok) return reject(headerMismatch(`the Mcp-Name header is malformed: ${headerName.problem}`));
    if (typeof bodyName !== 'string' || headerName.value !== bodyName) {
      return reject(headerMismatch(`Mcp-Name header value '${headerName.value.slice(0, 64)}' does not match body value '${String(bodyName).slice(0, 64)}'`));
    }
  }
  if (support.kind !== 'served') return reject(methodNotFound(method, support.kind));
  // An object by MCP's schema: a server's SDK answers another with -32603 and its schema library's dump.
  const args = params?.arguments;
  if ((method === 'tools/call' || method === 'prompts/get') && args !== undefined && !isRecord(args)) {
    return reject(invalidMeta('params.arguments must be an object'));
  }

  const level = logLevelProblem(meta.meta);
  if (level !== undefined) return reject(invalidMeta(level));
  return { kind: 'request', request: message as unknown as ModernRequest, meta: meta.meta };
}
