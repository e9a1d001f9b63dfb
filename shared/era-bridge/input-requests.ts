/**
 * The shapes of a bridged Multi Round-Trip Request (notes §4, schema.ts `InputRequiredResult`,
 * `InputResponseRequestParams`): which legacy server→client requests become input requests, the
 * client capability each needs, the `InputRequiredResult` the agent gets, and the checks on the
 * `inputResponses` it sends back. Pure functions, no I/O.
 *
 * - Only `tools/call`, `prompts/get` and `resources/read` may answer `input_required`.
 * - An input request is `{method, params}` exactly as the legacy server sent it, minus the fields
 *   2026-07-28 removed (`elicitationId` of URL elicitation, `task`).
 * - An input response is passed to the legacy server verbatim, but only once it has the shape of
 *   the result its method expects (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`).
 *
 * @module
 */
import * as z from '../zod.ts';
import { lackedForAll } from './client-capabilities.ts';
import { isRecord } from '../records.ts';

/** The modern requests that may come back `input_required`. */
export const INPUT_CAPABLE_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Server→client requests a modern agent can answer through MRTR, and the capability each needs. */
export const INPUT_METHODS = { 'elicitation/create': 'elicitation', 'sampling/createMessage': 'sampling', 'roots/list': 'roots' } as const;
export type InputMethod = keyof typeof INPUT_METHODS;

export function isInputMethod(method: string): method is InputMethod {
  return Object.hasOwn(INPUT_METHODS, method);
}

/** Params fields a legacy server may send that 2026-07-28 input requests no longer carry. */
const LEGACY_ONLY_PARAMS = ['elicitationId', 'task'];

export interface InputRequest {
  method: InputMethod;
  params: Record<string, unknown>;
}

/** The input request an agent sees for a legacy server→client request. */
export function inputRequestOf(method: InputMethod, params: unknown): InputRequest {
  const kept = Object.fromEntries(Object.entries(isRecord(params) ? params : {}).filter(([key]) => !LEGACY_ONLY_PARAMS.includes(key)));
  return { method, params: kept };
}

/** The client capabilities `requests` need and `capabilities` lacks (`{}` when none is missing; `client-capabilities.ts`). */
export function missingCapabilities(requests: Iterable<InputRequest>, capabilities: Record<string, unknown>): Record<string, Record<string, unknown>> {
  return lackedForAll(requests, capabilities);
}

/** `InputRequiredResult`: no caching fields, never `complete`; `serverInfo` in `_meta`, as on every result. */
export function inputRequiredResult(requests: Map<string, InputRequest>, requestState: string, serverInfo?: Record<string, unknown>): Record<string, unknown> {
  return {
    resultType: 'input_required',
    inputRequests: Object.fromEntries(requests),
    requestState,
    ...(serverInfo !== undefined ? { _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo } } : {}),
  };
}

/** Built on first use: a worker that bridges no legacy session to a modern server never needs them. */
const resultSchemas = z.lazily((): Record<InputMethod, z.ZodMiniType> => ({
  'elicitation/create': z.looseObject({ action: z.enum(['accept', 'decline', 'cancel']), content: z.optional(z.record(z.string(), z.unknown())) }),
  'sampling/createMessage': z.looseObject({ role: z.literal('assistant'), content: z.unknown().check(z.refine((c) => c !== undefined && c !== null, 'content is required')), model: z.string() }),
  'roots/list': z.looseObject({ roots: z.array(z.looseObject({ uri: z.string() })) }),
}));

export type InputResponsesCheck = { ok: true; responses: Record<string, unknown> } | { ok: false; problem: string };

/**
 * Checks `inputResponses` against the input requests still open. Keys the host did not ask for
 * are ignored (the spec says so); an absent `inputResponses` is an empty one (the host re-asks).
 */
export function checkInputResponses(value: unknown, open: Map<string, InputRequest>): InputResponsesCheck {
  if (value === undefined) return { ok: true, responses: {} };
  if (!isRecord(value)) return { ok: false, problem: 'params.inputResponses must be an object keyed by the inputRequests keys' };
  const responses: Record<string, unknown> = {};
  for (const [key, request] of open) {
    if (!Object.hasOwn(value, key)) continue;
    const parsed = resultSchemas()[request.method].safeParse(value[key]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.length > 0 ? `.${issue.path.map(String).join('.')}` : '';
      return { ok: false, problem: `params.inputResponses["${key.slice(0, 64)}"]${where} is not a result of ${request.method}: ${issue.message}` };
    }
    responses[key] = value[key];
  }
  return { ok: true, responses };
}

/** The original params of a modern request: what its retries must repeat (no `_meta`, no MRTR fields). */
export function originalParams(params: unknown): Record<string, unknown> {
  if (!isRecord(params)) return {};
  const { _meta: _m, inputResponses: _i, requestState: _s, ...rest } = params;
  return rest;
}
