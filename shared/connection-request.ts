/**
 * McpConnectionRequest: the only thing the worker may ask of a sidecar when it opens a channel.
 *
 * It carries references, never a command line and never a compiled policy: the sidecar resolves
 * the server by name and the trust profile by reference + expected revision, locally. The schema
 * is strict, so a `compiled-policy` key (or any unknown key) is refused with `invalid-request`.
 *
 * @module
 */
import * as z from './zod.ts';
import { WireError } from './errors.ts';
import { DESCRIPTOR_LEVEL_SCHEMAS } from './descriptors.ts';
import { AgentNameSchema, ProfileRefSchema, RevisionSchema, ServerNameSchema } from './names.ts';
import { TraceparentSchema } from './trace-context.ts';
import { parseWith, ValidationError } from './validation.ts';

/** What runs on the host for this channel: launch the configured server, or reach an HTTP one. */
export const innerTargetSchema = z.lazily(() => z.discriminatedUnion('type', [DESCRIPTOR_LEVEL_SCHEMAS.local, DESCRIPTOR_LEVEL_SCHEMAS.http]));
export type InnerTarget = z.infer<ReturnType<typeof innerTargetSchema>>;

/** What a connection's opaque `session` id may be. */
export const CONNECTION_SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

export const CONNECTION_ERAS = ['legacy', 'modern'] as const;

/** The protocol era of the agent behind a channel. */
export const ConnectionEraSchema = z.enum(CONNECTION_ERAS);
export type ConnectionEra = z.infer<typeof ConnectionEraSchema>;

export const mcpConnectionSchema = z.lazily(() =>
  z
    .strictObject({
      'server-name': ServerNameSchema,
      /** The agent's profile: a request the host composes restrictively with its own floor, never the last word. */
      'trust-profile-ref': z.optional(ProfileRefSchema),
      'trust-profile-revision': z.optional(RevisionSchema),
      /** Inner target; absent means `{"type":"local"}`. */
      'target': z.optional(innerTargetSchema()),
      /** Opaque agent session id: scopes the sidecar's per-session policy cache; never a credential. */
      'session': z.optional(z.string().check(z.regex(CONNECTION_SESSION_ID))),
      /** Agent name, for the sidecar's logs; a modern request's host state is keyed by it. */
      'agent': z.optional(AgentNameSchema),
      /**
       * The agent's protocol era, `legacy` when absent (read it with `eraOf`): legacy bridges one
       * session to one server process; `modern` (2026-07-28) carries one stateless request, served
       * by the agent's legacy instance on the host. Optional rather than defaulted, so a worker
       * never sends it for legacy traffic and an older host keeps accepting that.
       */
      'era': z.optional(ConnectionEraSchema),
      /**
       * W3C trace context of what opened the channel (the agent's `traceparent`, or the worker's new
       * trace): the host's audit lines and spans for this channel join that trace.
       */
      'traceparent': z.optional(TraceparentSchema),
    })
    .check(
      z.refine((c) => (c['trust-profile-ref'] === undefined) === (c['trust-profile-revision'] === undefined), {
        message: 'trust-profile-ref and trust-profile-revision go together: send a reference with its expected revision, or neither (the host\'s own floor then applies)',
        path: ['trust-profile-revision'],
      }),
    ),
);

export const mcpConnectionRequestSchema = z.lazily(() =>
  z.strictObject({
    type: z.literal('mcp'),
    connection: mcpConnectionSchema(),
  }),
);

export type McpConnection = z.infer<ReturnType<typeof mcpConnectionSchema>>;
export type McpConnectionRequest = z.infer<ReturnType<typeof mcpConnectionRequestSchema>>;

/** The era a connection asks for: `legacy` unless it says `modern`. */
export function eraOf(connection: McpConnection): ConnectionEra {
  return connection.era ?? 'legacy';
}

/** Parses a channel-open request; throws `ValidationError` listing every problem. */
export function parseMcpConnectionRequest(input: unknown): McpConnectionRequest {
  return parseWith(mcpConnectionRequestSchema(), input, 'connection request');
}

/** Same, but as the wire error a host sends back (reason `invalid-request`). */
export function parseMcpConnectionRequestOrWireError(input: unknown): McpConnectionRequest {
  try {
    return parseMcpConnectionRequest(input);
  } catch (error) {
    if (error instanceof ValidationError) throw error.toWireError();
    throw new WireError('invalid-request', 'Invalid connection request');
  }
}

/** True for requests whose outer type this contract knows; a host declines (null) anything else. */
export function isMcpRequestType(input: unknown): boolean {
  return typeof input === 'object' && input !== null && (input as { type?: unknown }).type === 'mcp';
}
