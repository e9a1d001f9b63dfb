/**
 * The errors a legacy session endpoint answers itself (`legacy-http-endpoint.ts`), worded and
 * coded as the SDK's `WebStandardStreamableHTTPServerTransport` answered them, plus the
 * `data.reason` every agent-facing error carries (DESIGN §4), and the `Content-Type` check a POST
 * gets before its body is looked at.
 *
 * @module
 */

/** A JSON-RPC error answered by the endpoint itself; `id` is always null, as the SDK's were. */
export function refuse(status: number, code: number, message: string, headers?: Record<string, string>): Response {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message, data: { reason: 'invalid-request' } }, id: null });
  return new Response(body, { status, headers: { 'content-type': 'application/json', ...headers } });
}

export const sessionNotFound = () => refuse(404, -32001, 'Session not found');

/** `Content-Type` names JSON: its media type, not a substring (`text/plain; x=application/json` is not). */
export function isJsonContentType(header: string | null): boolean {
  if (header === 'application/json') return true;
  if (header === null) return false;
  const semicolon = header.indexOf(';');
  const essence = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  // A comma means joined duplicate headers: ambiguous, so not JSON.
  return essence === 'application/json' && !header.includes(',');
}
