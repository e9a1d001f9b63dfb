/**
 * Multi Round-Trip Requests from a modern server, answered by a legacy agent (issue 14, "modern
 * server → legacy agent"): the legacy agent cannot read an `InputRequiredResult`, but it can
 * answer the server→client requests of its era. So when a modern server answers one of the
 * agent's `tools/call`, `prompts/get` or `resources/read` with `input_required`, the host puts
 * each input request to the agent as a real request over its session (`elicitation/create`,
 * `sampling/createMessage`, `roots/list`), collects the answers, and retries the request with
 * `inputResponses` and the server's `requestState` under a fresh upstream id; the agent sees
 * only the final answer, under its own id.
 *
 * - Bounded: after `MAX_ROUNDS` rounds the request fails instead of asking again.
 * - An input request whose kind the agent did not declare at `initialize` is not put to it (the
 *   server was told its capabilities, so it should not ask): the request fails with -32021.
 * - An agent's error to a question fails the request with that error; a cancellation of the
 *   request (`notifications/cancelled`) follows it to the round in flight upstream, and ends it.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { INPUT_CAPABLE_METHODS, INPUT_METHODS, isInputMethod } from './input-requests.ts';
import { isRecord } from '../records.ts';
import { hostAnswer } from '../audit/host-answers.ts';

type Id = string | number;

/** Rounds one request may take before the host stops asking. */
export const MAX_ROUNDS = 8;

export interface LegacyAgentRoundsOptions {
  /** A message to the legacy agent (a question, or the final answer). */
  toAgent(message: JSONRPCMessage): void;
  /** A message to the modern server (a retry, or a cancellation). */
  toServer(message: JSONRPCMessage): void;
  /** The capabilities the agent declared at `initialize`. */
  capabilities(): Record<string, unknown>;
}

interface Bridged {
  agentId: Id;
  method: string;
  params: Record<string, unknown>;
  round: number;
  upstreamId: Id;
  /** Questions put to the agent and not answered yet: host id → input key. */
  asked: Map<Id, string>;
  answers: Record<string, unknown>;
  requestState: unknown;
}

const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
const INTERNAL_ERROR = -32603;

export class LegacyAgentRounds {
  readonly #options: LegacyAgentRoundsOptions;
  /** By the id the server knows the request's current round under. */
  readonly #byUpstream = new Map<Id, Bridged>();
  /** By the id of a question put to the agent. */
  readonly #byQuestion = new Map<Id, Bridged>();
  #next = 0;

  constructor(options: LegacyAgentRoundsOptions) {
    this.#options = options;
  }

  /** Notes a request of the agent as it goes to the server (its own id is its first round's). */
  track(request: { id: Id; method: string; params?: Record<string, unknown> }): void {
    if (!INPUT_CAPABLE_METHODS.has(request.method)) return;
    this.#byUpstream.set(request.id, { agentId: request.id, method: request.method, params: request.params ?? {}, round: 0, upstreamId: request.id, asked: new Map(), answers: {}, requestState: undefined });
  }

  /** Takes a server message that belongs to a bridged request; false for anything else. */
  fromServer(message: JSONRPCMessage): boolean {
    if (!('id' in message) || 'method' in message) return false;
    const bridged = this.#byUpstream.get(message.id as Id);
    if (bridged === undefined) return false;
    this.#byUpstream.delete(bridged.upstreamId);
    const result = 'result' in message && isRecord(message.result) ? message.result : undefined;
    if (result?.resultType !== 'input_required') {
      this.#options.toAgent({ ...message, id: bridged.agentId } as JSONRPCMessage);
      return true;
    }
    this.#ask(bridged, result);
    return true;
  }

  /** Takes an agent message the host is waiting for (an answer to its question) or must redirect (a cancellation); false for anything else. */
  fromAgent(message: JSONRPCMessage): boolean {
    if ('method' in message) {
      if (message.method !== 'notifications/cancelled' || 'id' in message) return false;
      const requestId = (message.params as { requestId?: Id } | undefined)?.requestId;
      const bridged = [...this.#byUpstream.values(), ...this.#byQuestion.values()].find((b) => b.agentId === requestId);
      if (bridged === undefined) return false;
      this.#forget(bridged);
      if (bridged.upstreamId === bridged.agentId) return false; // its first round: the server knows the agent's own id
      this.#options.toServer({ ...message, params: { ...message.params, requestId: bridged.upstreamId } } as JSONRPCMessage);
      return true;
    }
    if (!('id' in message)) return false;
    const bridged = this.#byQuestion.get(message.id as Id);
    if (bridged === undefined) return false;
    this.#byQuestion.delete(message.id as Id);
    const key = bridged.asked.get(message.id as Id)!;
    bridged.asked.delete(message.id as Id);
    if ('error' in message) {
      this.#forget(bridged);
      this.#options.toAgent({ jsonrpc: '2.0', id: bridged.agentId, error: message.error } as JSONRPCMessage);
      return true;
    }
    bridged.answers[key] = (message as { result?: unknown }).result;
    if (bridged.asked.size === 0) this.#retry(bridged);
    return true;
  }

  #ask(bridged: Bridged, result: Record<string, unknown>): void {
    const requests = isRecord(result.inputRequests) ? Object.entries(result.inputRequests) : [];
    bridged.round += 1;
    bridged.requestState = result.requestState;
    bridged.answers = {};
    if (bridged.round > MAX_ROUNDS) return this.#fail(bridged, INTERNAL_ERROR, `The server asked for input more than ${MAX_ROUNDS} times for one ${bridged.method}: the host stopped asking`);
    const declared = this.#options.capabilities();
    const lacking = [...new Set(requests.map(([, r]) => (isRecord(r) && typeof r.method === 'string' && isInputMethod(r.method) ? INPUT_METHODS[r.method] : null)))];
    if (lacking.includes(null)) return this.#fail(bridged, INTERNAL_ERROR, 'The server asked for input of a kind this host cannot put to the agent');
    const missing = lacking.filter((capability) => !isRecord(declared[capability!]));
    if (missing.length > 0) {
      return this.#fail(bridged, MISSING_REQUIRED_CLIENT_CAPABILITY, `Missing required client capability: ${missing.join(', ')}: the server asked for it during ${bridged.method}`, {
        requiredCapabilities: Object.fromEntries(missing.map((m) => [m, {}])),
      });
    }
    if (requests.length === 0) return this.#retry(bridged); // load shedding: state only, retry at once
    for (const [key, request] of requests) {
      const id = `switchyard-input-${++this.#next}`;
      bridged.asked.set(id, key);
      this.#byQuestion.set(id, bridged);
      const { method, params } = request as { method: string; params?: unknown };
      this.#options.toAgent({ jsonrpc: '2.0', id, method, params: isRecord(params) ? params : {} } as JSONRPCMessage);
    }
  }

  #retry(bridged: Bridged): void {
    bridged.upstreamId = `switchyard-retry-${++this.#next}`;
    this.#byUpstream.set(bridged.upstreamId, bridged);
    const params = { ...bridged.params, inputResponses: bridged.answers, ...(bridged.requestState !== undefined ? { requestState: bridged.requestState } : {}) };
    this.#options.toServer({ jsonrpc: '2.0', id: bridged.upstreamId, method: bridged.method, params } as JSONRPCMessage);
  }

  /** The host's own answer, not the server's: marked so (the audit tells them apart), with a `reason` as every host error has. */
  #fail(bridged: Bridged, code: number, message: string, data?: Record<string, unknown>): void {
    this.#forget(bridged);
    this.#options.toAgent(hostAnswer({ jsonrpc: '2.0', id: bridged.agentId, error: { code, message, data: { ...data, reason: 'invalid-request' } } }) as JSONRPCMessage);
  }

  #forget(bridged: Bridged): void {
    this.#byUpstream.delete(bridged.upstreamId);
    for (const id of bridged.asked.keys()) this.#byQuestion.delete(id);
    bridged.asked.clear();
  }
}
