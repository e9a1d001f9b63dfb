/**
 * Which era a request to an agent endpoint speaks (notes §1, the classifier the spec's reference
 * server and the v2 SDK share):
 * - GET/DELETE with `Mcp-Session-Id` is legacy session traffic; without one, a request that says
 *   it is modern (a non-legacy `MCP-Protocol-Version`) gets 405, since 2026-07-28 has no GET
 *   stream; any other GET/DELETE keeps today's legacy answer;
 * - a POST whose body carries `params._meta["io.modelcontextprotocol/protocolVersion"]` is modern,
 *   even for `initialize` (which then gets 404), and even with a session header (ignored);
 * - a POST without the claim but with a non-legacy `MCP-Protocol-Version` is modern too, and is
 *   refused for its missing `_meta`;
 * - everything else is legacy, today's path untouched.
 *
 * The body is only read where the headers cannot decide: a POST with a legacy version header is
 * legacy without reading it (every legacy client after `initialize` sends one), so the legacy hot
 * path pays nothing. That one shortcut differs from the reference classifier: a legacy header
 * beside a modern claim (a client contradicting itself) is served as legacy, not refused -32020.
 * A POST without the header (an `initialize`, an older client) is read through a clone when its
 * declared length is at most 1 MiB, so the legacy path still gets the request untouched; a larger
 * or undeclared one is legacy (a modern client always sends the header).
 *
 * @module
 */
import { hasModernClaim } from './request-meta.ts';
import { isLegacyVersion, protocolVersionHeader } from './headers.ts';
import { parseModernBody, readModernBody, type ModernBody } from './modern-body.ts';
import { unreadableBody } from '../sessions/bounded-body.ts';

/** Largest body without a version header read to look for the modern claim (as large as an initialize may be). */
const MAX_PEEK_BYTES = 1024 * 1024;

export type Era = { kind: 'legacy' } | { kind: 'modern'; body: ModernBody } | { kind: 'reject'; status: 405 };

/** What the method and headers alone decide; `peek` means the body's claim decides. */
export type HeaderVerdict = 'legacy' | 'modern' | 'reject' | 'peek';

export function classifyByHeaders(method: string, headers: Headers): HeaderVerdict {
  const version = protocolVersionHeader(headers);
  const claimsModern = version !== undefined && !isLegacyVersion(version);
  if (method === 'GET' || method === 'DELETE') {
    return claimsModern && !headers.has('mcp-session-id') ? 'reject' : 'legacy';
  }
  if (method !== 'POST') return 'legacy';
  if (version === undefined) return 'peek';
  return claimsModern ? 'modern' : 'legacy';
}

/** Whether a parsed POST body (no version header) carries the modern claim; a batch never does. */
export function bodyClaimsModern(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return hasModernClaim((value as { params?: unknown }).params);
}

/** Shared by every legacy request: an era is only read. */
const LEGACY: Era = { kind: 'legacy' };

/**
 * The request's era; a promise only when its body must be read to tell, so a caller that awaits
 * only a promise gives the legacy hot path (a version header decides) no extra turn (issue 17).
 */
export function classifyEra(request: Request): Era | Promise<Era> {
  const verdict = classifyByHeaders(request.method, request.headers);
  if (verdict === 'legacy') return LEGACY;
  if (verdict === 'reject') return { kind: 'reject', status: 405 };
  if (verdict === 'modern') return readModernBody(request).then((body) => ({ kind: 'modern', body }));
  // Only a small body of declared length is peeked at: a clone tees the stream, and a large or
  // endless one must reach the legacy path's own caps unread.
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (!(declared >= 0 && declared <= MAX_PEEK_BYTES)) return LEGACY;
  return request.clone().text().then((text): Era => {
    const body = parseModernBody(text);
    return body.kind === 'json' && bodyClaimsModern(body.value) ? { kind: 'modern', body } : LEGACY;
  }, (error: unknown) => {
    throw unreadableBody(error);
  });
}
