/**
 * One round of a bridged Multi Round-Trip Request: serves an input-capable modern request
 * (tools/call, prompts/get, resources/read) from the agent's legacy instance, either as a first
 * request (a new `BridgedCall`) or as a retry carrying `requestState` and `inputResponses`
 * (resuming the parked call the state names), and says what the modern request is answered with.
 *
 * The retry's checks, in order, each a JSON-RPC error -32602 with `data.reason: "invalid-request"`
 * and a stable `data.requestState` (`invalid`, `gone`, `used`) a client can branch on:
 * the tag (a tampered or foreign state), the binding (another agent, server or trust revision; a
 * different method or params), the pending call (gone: answered, expired, or its instance ended),
 * the round (used already), then `inputResponses` (malformed). Only then is the round used up and
 * are the answers delivered, so a bad retry leaves the call waiting for a good one.
 *
 * A question whose capability the round's request did not declare is never put to the agent: the
 * server gets an error for it (what a client without the capability would give), and when the
 * round holds no question the agent can answer, the call is cancelled and the request gets -32021
 * (`MissingRequiredClientCapability`) naming what was lacking.
 * Except `roots/list`: an agent that declares no roots has none, so the host answers the empty list
 * itself. (The host declared `roots` at `initialize`, and server-everything asks right after
 * `initialized`, when it may land on the agent's first call: that must not fail the call.)
 *
 * @module
 */
import { BridgedCall, PENDING_CALL_MS, parkedCalls, type Attachment } from './bridged-call.ts';
import { checkInputResponses, inputRequestOf, inputRequiredResult, missingCapabilities, originalParams } from '../../../shared/era-bridge/input-requests.ts';
import type { LegacyInstance } from './legacy-instance.ts';
import type { InstanceKey } from './legacy-instance-pool.ts';
import { modernError, modernResult, stripModernMeta, URL_ELICITATION_REQUIRED, type JsonRpcErrorShape } from './modern-results.ts';
import { hostRequestStateCodec, paramsDigest, type RequestStateCodec } from './request-state.ts';
import { isRecord } from '../../../shared/records.ts';
import * as z from '../../../shared/zod.ts';

export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
/** More URL elicitations in one error than any server asks at once; past it the error goes as it came. */
const MAX_URL_ELICITATIONS = 16;
const INVALID_PARAMS = -32602;
/** The inputRequests keys of a -32042's URL elicitations (`url-elicitation-1`, …). */
const URL_ELICITATION_KEY = 'url-elicitation-';

export interface RoundRequest {
  method: string;
  /** The request's params as the agent sent them. */
  params: unknown;
  clientCapabilities: Record<string, unknown>;
  instance: LegacyInstance;
  key: InstanceKey;
  attachment: Attachment;
  /** Registers what the channel closing before the answer does (cancel the call). */
  onAbandon(cancel: () => void): void;
  codec?: RequestStateCodec;
  pendingMs?: number;
}

export type RoundAnswer = { result: Record<string, unknown> } | { error: JsonRpcErrorShape };

type StateProblem = 'invalid' | 'gone' | 'used';

const stateError = (problem: StateProblem, message: string): RoundAnswer => ({
  error: { code: INVALID_PARAMS, message, data: { reason: 'invalid-request', requestState: problem } },
});
const invalidParams = (problem: string): RoundAnswer => ({ error: { code: INVALID_PARAMS, message: `Invalid params: ${problem}`, data: { reason: 'invalid-request' } } });
const INTEGRITY = 'requestState failed its integrity check: retry the original request';
const GONE = 'The pending call this requestState names is gone (answered, expired, or its server ended): retry the original request';

export async function serveRound(request: RoundRequest): Promise<RoundAnswer> {
  const { method, params, instance, key } = request;
  const codec = request.codec ?? (await hostRequestStateCodec());
  // Only a retry's check and a sealed state need the digest: a call answered at once (most) never does.
  let digest: Promise<string> | undefined;
  const digestOnce = () => (digest ??= paramsDigest({ method, params: originalParams(params) }));
  const state = isRecord(params) ? params.requestState : undefined;
  let call: BridgedCall;
  if (state === undefined) {
    call = firstCall(request);
  } else {
    if (typeof state !== 'string') return stateError('invalid', 'params.requestState must be the string the host sent: retry the original request');
    const opened = await codec.open(state);
    if (!opened.ok) return opened.problem === 'expired' ? stateError('gone', GONE) : stateError('invalid', INTEGRITY);
    const claims = opened.claims;
    if (claims.agent !== key.agent || claims.server !== key.server || claims.revision !== key.revision) {
      return stateError('invalid', 'requestState was not issued to this agent for this server: retry the original request');
    }
    if (claims.method !== method || claims.digest !== (await digestOnce())) {
      return stateError('invalid', 'requestState belongs to another request: a retry repeats the original method and params');
    }
    if (claims.resend === true) {
      // After a URL elicitation the legacy server keeps no call: the user went to its URL (or
      // not), and the original request goes to it again, as a legacy client's retry would.
      const responses = (params as Record<string, unknown>).inputResponses;
      if (responses !== undefined && !isRecord(responses)) return invalidParams('params.inputResponses must be an object keyed by the inputRequests keys');
      // A user who declined (or dismissed) the URL has not done what the server asked first: sent
      // again, the call would only bring back the same elicitation, to be asked again and again.
      const refusal = urlElicitationRefusal(responses);
      if (refusal !== undefined) return urlElicitationRefused(method, refusal);
      call = firstCall(request);
    } else {
      const parked = parkedCalls(instance).get(claims.handle);
      if (parked === undefined) return stateError('gone', GONE);
      if (claims.round !== parked.round) return stateError('used', 'requestState was already used: send the one from the latest InputRequiredResult, or retry the original request');
      const responses = checkInputResponses((params as Record<string, unknown>).inputResponses, parked.openRequests);
      if (!responses.ok) return invalidParams(responses.problem);
      parked.claim(request.attachment, responses.responses);
      call = parked;
    }
  }
  request.onAbandon(() => call.cancel('The agent closed its request'));
  return settle(request, call, codec, digestOnce);
}

/** `decline` or `cancel` when the user gave that answer to any of a resend state's URL elicitations. */
function urlElicitationRefusal(responses: Record<string, unknown> | undefined): 'decline' | 'cancel' | undefined {
  for (const [key, response] of Object.entries(responses ?? {})) {
    if (!key.startsWith(URL_ELICITATION_KEY) || !isRecord(response)) continue;
    if (response.action === 'decline' || response.action === 'cancel') return response.action;
  }
  return undefined;
}

/** What the server's -32042 said, as a modern agent may hear it (`modernError`), now that the user will not open its URL. */
function urlElicitationRefused(method: string, action: 'decline' | 'cancel'): RoundAnswer {
  const what = action === 'decline' ? 'declined' : 'dismissed';
  return {
    error: {
      code: -32603,
      message: `URL elicitation required: the server needs the user to open its URL before ${method}, and the user ${what} it, so the request was not sent again`,
      data: { serverCode: URL_ELICITATION_REQUIRED, action, reason: 'invalid-request' },
    },
  };
}

/** The request as its server gets it the first time (or again, after a URL elicitation): no modern `_meta`, no MRTR fields. */
function firstCall(request: RoundRequest): BridgedCall {
  const forwarded = stripModernMeta(request.params);
  const { inputResponses: _i, requestState: _s, ...upstream } = forwarded ?? {};
  return new BridgedCall(request.instance, { method: request.method, ...(forwarded !== undefined ? { params: upstream } : {}) }, request.attachment);
}

/** Waits for the call's next step and says what the round is answered with. */
async function settle(request: RoundRequest, call: BridgedCall, codec: RequestStateCodec, digestOnce: () => Promise<string>): Promise<RoundAnswer> {
  const { method, params, instance, key } = request;
  let step = await call.next();
  while (step.kind === 'input' && !isRecord(request.clientCapabilities.roots) && [...step.requests.values()].some((r) => r.method === 'roots/list')) {
    for (const [inputKey, input] of step.requests) if (input.method === 'roots/list') call.answer(inputKey, { result: { roots: [] } });
    step = await call.next();
  }
  if (step.kind === 'failed') {
    call.complete();
    throw step.error;
  }
  if (step.kind === 'outcome') {
    call.complete();
    if ('error' in step.outcome && step.outcome.error.code === URL_ELICITATION_REQUIRED) {
      const asked = await urlElicitationRound(request, step.outcome.error, codec, digestOnce);
      if (asked !== null) return asked;
    }
    return 'result' in step.outcome ? { result: modernResult(method, step.outcome.result, instance.serverInfo) } : { error: modernError(method, stripModernMeta(params), step.outcome.error, 'legacy') };
  }
  // A question the request's client cannot answer is not put to it: with others it can, the server
  // hears "not declared" for that one (as from a client without the capability) and the rest are
  // asked; with none it can, the request fails -32021 naming what it lacks.
  const answerable = new Map([...step.requests].filter(([, input]) => Object.keys(missingCapabilities([input], request.clientCapabilities)).length === 0));
  const missing = missingCapabilities([...step.requests.values()].filter((input) => ![...answerable.values()].includes(input)), request.clientCapabilities);
  const names = Object.keys(missing);
  if (names.length > 0 && answerable.size === 0) {
    const what = names.join(', ');
    call.cancel(`The modern agent did not declare the ${what} capability`, { code: -32603, message: `The client did not declare the ${what} capability` });
    return {
      error: {
        code: MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: `Missing required client capability: ${what}: the server asked for it during ${method}; declare it in _meta clientCapabilities and retry`,
        data: { requiredCapabilities: missing, reason: 'invalid-request' },
      },
    };
  }
  for (const [inputKey, input] of step.requests) {
    if (answerable.has(inputKey)) continue;
    const lacked = Object.keys(missingCapabilities([input], request.clientCapabilities)).join(', ');
    call.answer(inputKey, { error: { code: -32603, message: `The client did not declare the ${lacked} capability` } });
  }
  const pendingMs = request.pendingMs ?? PENDING_CALL_MS;
  const sealed = await codec.seal({ agent: key.agent, server: key.server, revision: key.revision, handle: call.handle, round: call.round, method, digest: await digestOnce() }, pendingMs);
  call.park(pendingMs);
  return { result: inputRequiredResult(answerable, sealed, instance.serverInfo) };
}

const UrlElicitationsSchema = z.array(
  z.looseObject({ mode: z.literal('url'), url: z.string().check(z.url('must be an absolute URL')), message: z.string(), elicitationId: z.optional(z.string()) }),
).check(z.minLength(1), z.maxLength(MAX_URL_ELICITATIONS));

/**
 * A legacy server's `URLElicitationRequiredError` (-32042, 2025-11-25) as 2026-07-28 asks it: an
 * `InputRequiredResult` of URL elicitations whose state resends the request (a modern agent must
 * not be sent -32042). A request without the `elicitation.url` capability gets -32021, as for a
 * question it cannot answer. Null when the error's `data.elicitations` is not a list of URL
 * elicitations: the error then goes as any other (`modernError`).
 */
async function urlElicitationRound(request: RoundRequest, error: JsonRpcErrorShape, codec: RequestStateCodec, digestOnce: () => Promise<string>): Promise<RoundAnswer | null> {
  const elicitations = UrlElicitationsSchema.safeParse(isRecord(error.data) ? error.data.elicitations : undefined);
  if (!elicitations.success) return null;
  const asked = new Map(elicitations.data.map((elicitation, i) => [`${URL_ELICITATION_KEY}${i + 1}`, inputRequestOf('elicitation/create', elicitation)] as const));
  const missing = missingCapabilities(asked.values(), request.clientCapabilities);
  if (Object.keys(missing).length > 0) {
    return {
      error: {
        code: MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: `Missing required client capability: elicitation: the server asked for a URL elicitation during ${request.method}; declare it in _meta clientCapabilities and retry`,
        data: { requiredCapabilities: missing, reason: 'invalid-request' },
      },
    };
  }
  const { key, method } = request;
  const sealed = await codec.seal({ agent: key.agent, server: key.server, revision: key.revision, handle: '', round: 0, method, digest: await digestOnce(), resend: true }, request.pendingMs ?? PENDING_CALL_MS);
  return { result: inputRequiredResult(asked, sealed, request.instance.serverInfo) };
}
