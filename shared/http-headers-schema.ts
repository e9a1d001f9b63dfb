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
/** What fetch takes as a field value: a ByteString without CR, LF or NUL. */
const FIELD_VALUE = /^[^\r\n\0\u0100-\uffff]*$/;

export const HttpHeadersSchema = z
  .record(z.string(), z.string().check(z.regex(FIELD_VALUE, 'must be an HTTP header value: no line break, and no character past U+00FF (the value is not shown: it may be a credential)')))
  .check(
    z.superRefine((headers, ctx) => {
      for (const name of Object.keys(headers)) {
        if (!FIELD_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name: letters, digits and !#$%&\'*+-.^_`|~', input: name });
      }
    }),
  );
