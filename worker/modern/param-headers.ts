/**
 * The `Mcp-Param-{Name}` headers of a modern `tools/call` (2026-07-28 Streamable HTTP, "Custom
 * Headers"): each one decoded as the body would carry it (OWS trimmed, the Base64 sentinel
 * decoded); a malformed one is a header mismatch (-32020, HTTP 400), as the spec requires of a
 * recognized header with invalid characters, and so is one longer than the host takes
 * (`MAX_PARAM_HEADER_NAME_LENGTH`, `MAX_PARAM_HEADER_VALUE_LENGTH`). Which ones the tool expects, and whether each matches
 * its argument, only the host can tell (`shared/param-headers-meta.ts`): the decoded values go to
 * it in the request's `_meta`.
 *
 * @module
 */
import { MAX_PARAM_HEADER_NAME_LENGTH, MAX_PARAM_HEADER_VALUE_LENGTH, PARAM_HEADERS_META_KEY, type ParamHeaders } from '../../shared/param-headers-meta.ts';
import { decodeHeaderValue } from './headers.ts';
import { headerMismatch, type ModernRejection } from './modern-errors.ts';
import type { ModernRequest } from './validate-request.ts';

const PREFIX = 'mcp-param-';
/** More than any tool's annotated arguments; beyond it a request is refused, not half-checked. */
const MAX_PARAM_HEADERS = 64;

export type ParamHeadersRead = { ok: true; values: ParamHeaders } | { ok: false; rejection: ModernRejection };

/**
 * Every header has to be looked at to find these, and `forEach` is how: Deno's `Headers`
 * iterator cost ~80 µs of a modern call against ~20 µs for `forEach` over the same sorted,
 * combined pairs (issue 17). The first problem in that order is the one reported, as before.
 */
export function readParamHeaders(headers: Headers): ParamHeadersRead {
  const values: ParamHeaders = {};
  let count = 0;
  let rejection: ModernRejection | undefined;
  headers.forEach((raw, name) => {
    if (rejection !== undefined || !name.startsWith(PREFIX) || name.length === PREFIX.length) return;
    if (++count > MAX_PARAM_HEADERS) {
      rejection = headerMismatch(`more than ${MAX_PARAM_HEADERS} Mcp-Param-* headers`);
      return;
    }
    const key = name.slice(PREFIX.length);
    const shown = `Mcp-Param-${key.slice(0, 64)}`;
    // The host's limits (`paramHeadersSchema`): past them it would drop every header, not this one.
    if (key.length > MAX_PARAM_HEADER_NAME_LENGTH) {
      rejection = headerMismatch(`the name of the ${shown}… header is longer than ${MAX_PARAM_HEADER_NAME_LENGTH} characters after Mcp-Param-`);
      return;
    }
    const decoded = decodeHeaderValue(raw);
    if (!decoded.ok) rejection = headerMismatch(`the ${shown} header is malformed: ${decoded.problem}`);
    else if (decoded.value.length > MAX_PARAM_HEADER_VALUE_LENGTH) rejection = headerMismatch(`the ${shown} header is longer than ${MAX_PARAM_HEADER_VALUE_LENGTH} characters (decoded)`);
    else values[key] = decoded.value;
  });
  return rejection !== undefined ? { ok: false, rejection } : { ok: true, values };
}

/**
 * The request as it goes to the host: for `tools/call` the decoded headers under the Switchyard
 * `_meta` key; any value the agent put there itself is dropped, for every method.
 */
export function withParamHeaders(request: ModernRequest, values: ParamHeaders | null): ModernRequest {
  const params = request.params ?? {};
  const meta = { ...(params._meta as Record<string, unknown> | undefined) };
  delete meta[PARAM_HEADERS_META_KEY];
  if (values !== null) meta[PARAM_HEADERS_META_KEY] = values;
  return { ...request, params: { ...params, _meta: meta } };
}
