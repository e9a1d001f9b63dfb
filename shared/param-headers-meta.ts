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

/** The longest `{name}` of an `Mcp-Param-{Name}` header the host takes (the worker refuses a longer one). */
export const MAX_PARAM_HEADER_NAME_LENGTH = 256;
/** The longest decoded value of an `Mcp-Param-*` header the host takes (the worker refuses a longer one). */
export const MAX_PARAM_HEADER_VALUE_LENGTH = 8192;

/** Decoded `Mcp-Param-{Name}` values by lower-case `{name}`. */
export const paramHeadersSchema = z.lazily(() => z.record(z.string().check(z.maxLength(MAX_PARAM_HEADER_NAME_LENGTH)), z.string().check(z.maxLength(MAX_PARAM_HEADER_VALUE_LENGTH))));
export type ParamHeaders = z.infer<ReturnType<typeof paramHeadersSchema>>;
