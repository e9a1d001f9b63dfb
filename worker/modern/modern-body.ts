/**
 * Reads a modern POST's body once: within the same 4 MiB the session endpoints allow, parsed, and
 * refused when nested deeper than `MAX_JSON_DEPTH` (the cap every agent body gets, before zod or
 * the link's `JSON.stringify` sees it).
 *
 * @module
 */
import { parseJsonWithinDepth } from '../../shared/json-depth.ts';
import { readBoundedBody } from '../sessions/bounded-body.ts';

/** The largest modern body read; the SDK's limit for session POSTs, so both eras agree. */
export const MAX_MODERN_BODY_BYTES = 4 * 1024 * 1024;

export type ModernBody =
  | { kind: 'json'; value: unknown }
  | { kind: 'not-json' }
  | { kind: 'too-large' }
  | { kind: 'too-deep'; id: string | number | null };

export async function readModernBody(request: Request): Promise<ModernBody> {
  const body = await readBoundedBody(request, MAX_MODERN_BODY_BYTES);
  if (body.kind === 'too-large') return { kind: 'too-large' };
  return parseModernBody(body.text);
}

export function parseModernBody(text: string): ModernBody {
  const read = parseJsonWithinDepth(text);
  return read.kind === 'too-deep' ? { kind: 'too-deep', id: read.id } : read;
}
