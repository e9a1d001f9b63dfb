/**
 * How a modern `tools/call`'s `Mcp-Param-*` headers reach the host: the worker reads them (HTTP
 * headers do not cross the link), decodes each one, and puts them in the request's `_meta` under
 * a Switchyard key, by lower-case name; the host takes them out again before anything is
 * forwarded and checks them against the tool's `x-mcp-header` arguments, which only it can see
 * (it caches the server's tool list per instance). The worker always overwrites the key, so an
 * agent cannot speak for headers it did not send.
 *
 * @module
 */
import * as z from './zod.ts';

export const PARAM_HEADERS_META_KEY = 'dev.switchyard/mcpParamHeaders';

/** Decoded `Mcp-Param-{Name}` values by lower-case `{name}`. */
export const ParamHeadersSchema = z.record(z.string().check(z.maxLength(256)), z.string().check(z.maxLength(8192)));
export type ParamHeaders = z.infer<typeof ParamHeadersSchema>;
