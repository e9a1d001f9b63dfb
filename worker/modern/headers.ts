/**
 * The standard headers of a modern (2026-07-28) POST: `MCP-Protocol-Version`, `Mcp-Method` and
 * `Mcp-Name`, read case-insensitively (the `Headers` API does that), their surrounding optional
 * whitespace (SP, HTAB) trimmed, and `Mcp-Name` decoded from the Base64 sentinel
 * `=?base64?{Base64(UTF-8 value)}?=` before it is compared with the body.
 *
 * A value that only starts or only ends with a sentinel marker is a literal. A sentinel whose
 * inside is not canonical Base64 (bad padding, a character outside the alphabet) or not UTF-8 is
 * a malformed header, as is a value with a character outside visible ASCII, SP and HTAB, and a
 * sentinel folded with another value (the header sent more than once).
 *
 * @module
 */

/** Protocol versions of the session-based era: a header with one of these is legacy traffic. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
/** The modern versions Switchyard serves (what `-32022` lists as `supported`). */
export const SUPPORTED_MODERN_VERSIONS: readonly string[] = ['2026-07-28'];

export const PROTOCOL_VERSION_HEADER = 'mcp-protocol-version';
export const METHOD_HEADER = 'mcp-method';
export const NAME_HEADER = 'mcp-name';

const SENTINEL = /^=\?base64\?(.*)\?=$/s;
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const ALLOWED_CHARS = /^[\x21-\x7e \t]*$/;

export type HeaderValue = { ok: true; value: string } | { ok: false; problem: string };

/** Trims the optional whitespace (SP, HTAB) around a header value. */
export function trimOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

/**
 * A header that takes no Base64 sentinel (`Mcp-Method`), as compared with the body: trimmed, and
 * refused only for a character outside visible ASCII, space and tab. A sentinel stays the literal
 * text it is, which matches no method: an intermediary routing on the header must see the very
 * value the server runs (spec, Server Validation: only Mcp-Name and Mcp-Param-* are decoded).
 */
export function plainHeaderValue(raw: string): HeaderValue {
  if (!ALLOWED_CHARS.test(raw)) return { ok: false, problem: 'it contains a character outside visible ASCII, space and tab' };
  return { ok: true, value: trimOws(raw) };
}

/** A header value as the body would carry it (`Mcp-Name`, `Mcp-Param-*`): trimmed, and decoded when it is a Base64 sentinel. */
export function decodeHeaderValue(raw: string): HeaderValue {
  if (!ALLOWED_CHARS.test(raw)) return { ok: false, problem: 'it contains a character outside visible ASCII, space and tab' };
  const value = trimOws(raw);
  // `Headers` folds a repeated header into one value joined by ", ": a sentinel beside another
  // value is that, not a Base64 problem. (Two plain values fold to what one "a, b" would be.)
  if (foldedSentinel(value)) return { ok: false, problem: 'it was sent more than once' };
  const sentinel = SENTINEL.exec(value);
  if (sentinel === null) return { ok: true, value };
  const encoded = sentinel[1]!;
  if (!CANONICAL_BASE64.test(encoded)) return { ok: false, problem: 'its =?base64?…?= value is not valid Base64' };
  const binary = atob(encoded);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  try {
    return { ok: true, value: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return { ok: false, problem: 'its =?base64?…?= value is not UTF-8' };
  }
}

/** A sentinel first or last among values joined by ", " (no regex: a header may be long). */
function foldedSentinel(value: string): boolean {
  return (value.startsWith('=?base64?') && value.includes('?=, ')) || (value.endsWith('?=') && value.includes(', =?base64?'));
}

/** The protocol version header, trimmed; undefined when absent. */
export function protocolVersionHeader(headers: Headers): string | undefined {
  const value = headers.get(PROTOCOL_VERSION_HEADER);
  return value === null ? undefined : trimOws(value);
}

/** Whether a protocol version header names a version of the session-based era. */
export function isLegacyVersion(version: string): boolean {
  return LEGACY_PROTOCOL_VERSIONS.includes(version);
}
