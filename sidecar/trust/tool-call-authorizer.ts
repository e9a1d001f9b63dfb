/**
 * Tool-call authorization by the JSON Schemas of a trust profile (DESIGN §5: it applies in addition
 * to containment, also to uncontained servers).
 *
 * Schemas are evaluated over `{toolName, input}` (`input` = the call's `arguments`, `{}` when
 * absent). A call is allowed when the profile's allow rule passes (or there is none) **and** no
 * restricted schema matches. Within one profile the allowed schemas are alternatives (any one
 * suffices); composition joins the rules of restrictive bases with AND and of permissive bases
 * with OR (see `compose.ts`). A profile without any tool-call schema therefore allows every call.
 *
 * The remote host calls {@link ToolCallAuthorizer.filter} on every agent→server message before it
 * reaches the server; a denied call is answered with a `denied-by-policy` JSON-RPC error and never
 * forwarded. Deny messages name the tool and the rule, never the call's input.
 *
 * Authorization fails closed: a call nested deeper than `MAX_JSON_DEPTH` is refused before any
 * schema sees it (the link and the worker refuse those earlier; this is the last line), and any
 * exception while deciding (a schema that recurses forever, a stack overflow, an ajv bug) denies
 * the call with `denied-by-policy`. `filter` never throws, because it runs inside the link's
 * message handler, where an exception would reach the sidecar's event loop.
 *
 * @module
 */
import { type JsonRpcErrorResponse, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { exceedsDepth, MAX_JSON_DEPTH } from '../../shared/json-depth.ts';
import type { EffectiveProfile, ToolCallCondition } from './effective-profile.ts';
import { SchemaCompiler } from './json-schema.ts';

export type ToolCallDecision = { readonly allowed: true } | { readonly allowed: false; readonly message: string };

type Predicate = (value: unknown) => boolean;

function compileCondition(condition: ToolCallCondition, compiler: SchemaCompiler): Predicate {
  if ('schema' in condition) return compiler.compile(condition.schema);
  if ('all' in condition) {
    const parts = condition.all.map((c) => compileCondition(c, compiler));
    return (value) => parts.every((p) => p(value));
  }
  const parts = condition.any.map((c) => compileCondition(c, compiler));
  return (value) => parts.some((p) => p(value));
}

function requestId(message: Record<string, unknown>): string | number | null {
  const id = message['id'];
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function isToolCall(message: unknown): message is Record<string, unknown> {
  return typeof message === 'object' && message !== null && (message as { method?: unknown }).method === 'tools/call';
}

function toolNameOf(message: Record<string, unknown>): string | undefined {
  const params = message['params'];
  const name = typeof params === 'object' && params !== null ? (params as Record<string, unknown>)['name'] : undefined;
  return typeof name === 'string' ? name : undefined;
}

export class ToolCallAuthorizer {
  /** True when the profile has no tool-call schema at all: every call is allowed. */
  readonly unrestricted: boolean;
  readonly #allowed: Predicate | undefined;
  readonly #restricted: readonly Predicate[];

  private constructor(allowed: Predicate | undefined, restricted: readonly Predicate[]) {
    this.#allowed = allowed;
    this.#restricted = restricted;
    this.unrestricted = allowed === undefined && restricted.length === 0;
  }

  /**
   * Compiles a profile's tool-call rules once (per session and profile revision).
   *
   * @param effective The effective profile.
   * @returns An authorizer for that profile.
   * @throws Error when a schema cannot be compiled (an unresolvable `$ref`, for example).
   */
  static fromProfile(effective: EffectiveProfile): ToolCallAuthorizer {
    const compiler = new SchemaCompiler();
    const allowed = effective.allowedToolCalls === undefined ? undefined : compileCondition(effective.allowedToolCalls, compiler);
    return new ToolCallAuthorizer(allowed, effective.restrictedToolCalls.map((s) => compiler.compile(s)));
  }

  /**
   * Decides one tool call.
   *
   * @param toolName The `params.name` of the `tools/call` request.
   * @param input The `params.arguments` (`{}` when absent).
   * @returns `{allowed: true}`, or `{allowed: false, message}` saying which rule denied it.
   * @throws Whatever a schema throws while validating (a `RangeError` from one that recurses
   *   forever, say); {@link filter}, the path every agent message takes, turns that into a denial.
   * @example Denying a tool by name
   * ```ts
   * const authorizer = ToolCallAuthorizer.fromProfile({ ...NEUTRAL_PROFILE,
   *   restrictedToolCalls: [{ properties: { toolName: { const: 'delete_file' } }, required: ['toolName'] }] });
   * authorizer.authorize('delete_file', {}).allowed; // false
   * authorizer.authorize('read_file', {}).allowed; // true
   * ```
   */
  authorize(toolName: string, input: unknown): ToolCallDecision {
    const subject = { toolName, input };
    if (this.#allowed !== undefined && !this.#allowed(subject)) {
      return { allowed: false, message: `Tool call "${toolName}" denied by the trust profile: it matches no allowed tool-call schema` };
    }
    const hit = this.#restricted.findIndex((matches) => matches(subject));
    if (hit >= 0) {
      return { allowed: false, message: `Tool call "${toolName}" denied by the trust profile: it matches restricted tool-call schema ${hit + 1}` };
    }
    return { allowed: true };
  }

  /**
   * Checks one agent→server JSON-RPC message.
   *
   * @param message A parsed JSON-RPC message (or batch).
   * @returns `null` to forward it unchanged, or the error response to send back instead. Only
   *   `tools/call` requests are ever stopped; a malformed one (no string `params.name`) is denied,
   *   and so is a batch holding a tool call, since one reply cannot answer part of a batch.
   */
  filter(message: unknown): JsonRpcErrorResponse | null {
    if (this.unrestricted) return null;
    try {
      return this.#decide(message);
    } catch {
      // Not logged with the input: it is the agent's, and may be what made the schema throw.
      const name = isToolCall(message) ? toolNameOf(message) : undefined;
      const denial = `Tool call${name === undefined ? '' : ` "${name.slice(0, 64)}"`} denied by the trust profile: its rules could not be evaluated for this call`;
      return jsonRpcErrorBody(isToolCall(message) ? requestId(message) : null, new WireError('denied-by-policy', denial, name === undefined ? undefined : { detail: { tool: name.slice(0, 64) } }));
    }
  }

  #decide(message: unknown): JsonRpcErrorResponse | null {
    if (Array.isArray(message)) {
      if (!message.some(isToolCall)) return null;
      return jsonRpcErrorBody(null, new WireError('denied-by-policy', 'Tool call denied by the trust profile: batched tool calls cannot be authorized'));
    }
    if (!isToolCall(message)) return null;
    const name = toolNameOf(message);
    if (name === undefined) {
      return jsonRpcErrorBody(requestId(message), new WireError('denied-by-policy', 'Tool call denied by the trust profile: params.name is missing'));
    }
    if (exceedsDepth(message, MAX_JSON_DEPTH)) {
      return jsonRpcErrorBody(requestId(message), new WireError('invalid-request', `Request nested deeper than ${MAX_JSON_DEPTH} levels`, { detail: { tool: name.slice(0, 64) } }));
    }
    const input = (message['params'] as Record<string, unknown>)['arguments'] ?? {};
    const decision = this.authorize(name, input);
    if (decision.allowed) return null;
    return jsonRpcErrorBody(requestId(message), new WireError('denied-by-policy', decision.message, { detail: { tool: name } }));
  }
}

/**
 * Function form of {@link ToolCallAuthorizer.filter}, for a message pipeline.
 *
 * @param authorizer The session's authorizer.
 * @param message One agent→server JSON-RPC message.
 * @returns `null` to forward, or the JSON-RPC error response to send back to the agent.
 */
export function filterToolCall(authorizer: ToolCallAuthorizer, message: unknown): JsonRpcErrorResponse | null {
  return authorizer.filter(message);
}
