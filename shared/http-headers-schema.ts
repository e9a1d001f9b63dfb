/**
 * The headers a config sends to an HTTP MCP server (`"headers"` of a worker `http` descriptor and
 * of an mcp.json entry): each a valid HTTP field, checked when the config is read. A value fetch
 * cannot send (a line break, a character past U+00FF) made fetch throw on every request, with
 * the value, a credential, quoted whole in the error that reached agents and the status page. No
 * message here quotes a value.
 *
 * @module
 */
import * as z from './zod.ts';

/** RFC 9110 `token`: a field name. */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What every runtime's fetch sends as a field value: tab, visible ASCII, space and Latin-1, no control character. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Fields the connection owns, which Node's fetch refuses to send. */
const CONNECTION_FIELDS = new Set(['connection', 'content-length', 'expect', 'keep-alive', 'transfer-encoding', 'upgrade']);

export const HttpHeadersSchema = z
  .record(z.string(), z.string().check(z.regex(FIELD_VALUE, 'must be an HTTP header value: no line break or other control character, and none past U+00FF (the value is not shown: it may be a credential)')))
  .check(
    z.superRefine((headers, ctx) => {
      for (const name of Object.keys(headers)) {
        if (!FIELD_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name: letters, digits and !#$%&\'*+-.^_`|~', input: name });
        else if (CONNECTION_FIELDS.has(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: [name], message: 'is the connection\'s own header, which fetch sets itself and refuses to send', input: name });
      }
    }),
  );
