/**
 * A legacy session's POST body, as `session-route.ts` reads it for the endpoint (parsed once,
 * depth-checked there) or as the endpoint reads it when it was not: JSON, not JSON, or over the
 * SDK's size limit, each answered by the endpoint after its own header checks.
 *
 * @module
 */
import { readBoundedBody } from './bounded-body.ts';

/** Largest POST body (the SDK's `DEFAULT_MAX_REQUEST_BODY_SIZE`). */
export const MAX_LEGACY_BODY_BYTES = 4 * 1024 * 1024;

/** A POST's body as the caller read it: parsed, not JSON, or over the limit. */
export type LegacyPostBody = { kind: 'json'; value: unknown } | { kind: 'not-json' } | { kind: 'too-large' };

/** Reads and parses a POST body the caller did not read, within `MAX_LEGACY_BODY_BYTES`. */
export async function readLegacyPostBody(request: Request): Promise<LegacyPostBody> {
  const body = await readBoundedBody(request, MAX_LEGACY_BODY_BYTES);
  if (body.kind === 'too-large') return body;
  try {
    return { kind: 'json', value: JSON.parse(body.text) };
  } catch {
    return { kind: 'not-json' };
  }
}
