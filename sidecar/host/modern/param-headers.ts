/**
 * Takes the `Mcp-Param-*` headers the worker put in a modern request's `_meta`
 * (`shared/param-headers-meta.ts`) out of its params, so no server ever sees the Switchyard key.
 * A value that is not the shape the worker sends counts as no headers at all.
 *
 * @module
 */
import { PARAM_HEADERS_META_KEY, paramHeadersSchema, type ParamHeaders } from '../../../shared/param-headers-meta.ts';
import { isRecord } from '../../../shared/records.ts';

export function takeParamHeaders(params: unknown): { params: unknown; headers: ParamHeaders } {
  if (!isRecord(params) || !isRecord(params._meta) || !Object.hasOwn(params._meta, PARAM_HEADERS_META_KEY)) return { params, headers: {} };
  const { [PARAM_HEADERS_META_KEY]: sent, ...meta } = params._meta;
  return { params: { ...params, _meta: meta }, headers: headersOf(sent) };
}

/**
 * What the worker sent, or no headers. Most calls send none: every modern `tools/call` carries the
 * key, and an empty object is what the schema gives back for `{}`, without a parse per request.
 */
function headersOf(sent: unknown): ParamHeaders {
  if (isRecord(sent) && Object.keys(sent).length === 0 && Object.getPrototypeOf(sent) === Object.prototype) return {};
  const parsed = paramHeadersSchema().safeParse(sent);
  return parsed.success ? parsed.data : {};
}
