/**
 * The `"audit"` section, the same in the worker config and in `sidecar.json`: where audit lines
 * go, whether argument values are kept, and an optional OpenTelemetry collector for traces.
 *
 * @module
 */
import * as z from '../zod.ts';
import { HttpHeadersSchema } from '../http-headers-schema.ts';

export const OtlpConfigSchema = z
  .strictObject({
    endpoint: z
      .string()
      .check(
        z.url('must be an absolute URL'),
        z.refine((u) => /^https?:\/\//i.test(u), 'must be an http: or https: URL'),
        z.describe('The collector\'s OTLP/HTTP traces URL, e.g. "http://127.0.0.1:4318/v1/traces"; spans are sent as OTLP JSON'),
      ),
    headers: z
      .optional(HttpHeadersSchema)
      .check(z.describe('HTTP headers sent with every export (e.g. an API key); never logged')),
  })
  .check(z.describe('Export one span per audited call to an OpenTelemetry collector (batched, bounded queue; a call never waits for it, and spans are dropped with a counted warning while the collector is down)'));

export const AuditConfigSchema = z
  .strictObject({
    file: z
      .optional(z.string().check(z.minLength(1)))
      .check(z.describe('Append every audit line to this file (created 0600) instead of stderr. A relative path is from the worker config file\'s directory (the working directory for an inline config) or the sidecar\'s config dir; under Deno the worker needs --allow-write for it, which switchyard worker grants. Default: stderr, beside the structured logs, at the log level')),
    'include-arguments': z
      .optional(z.boolean())
      .check(z.meta({ default: false }), z.describe('Keep each call\'s argument values in its audit line; off by default, since arguments may hold anything the agent sent')),
    otlp: z.optional(OtlpConfigSchema),
  })
  .check(z.describe('Audit log: one JSON line per tools/call, resources/read and prompts/get, per refused open and per refused agent credential; on the worker also per link request it refuses, per host that proves its key, per host link that ends, per changed config put in force and per legacy agent session opened and ended; on the sidecar also its link to the worker, each time it comes up, is refused and ends'));

export type AuditConfig = z.infer<typeof AuditConfigSchema>;
export type OtlpConfig = z.infer<typeof OtlpConfigSchema>;
