/**
 * BridgedCall: one input-capable modern request (tools/call, prompts/get, resources/read) as a
 * call on the agent's legacy instance that may outlive the HTTP request which started it.
 *
 * A legacy server asks its client mid-call (`elicitation/create`, `sampling/createMessage`,
 * `roots/list`); a modern agent is asked through an `InputRequiredResult` instead, which
 * completes its HTTP request while the legacy call waits for the answer (notes §4). So the call
 * is held here, between rounds, *parked* on its instance under a random handle that the sealed
 * `requestState` names; the agent's retry (a new request, possibly through another worker
 * instance, DESIGN §8) finds it again, answers the open server requests and waits for the next
 * step: the call's outcome, or another question.
 *
 * - Each round's channel *attaches* for as long as it waits: progress (under that request's own
 *   token) and log lines go to it; while parked they are dropped, no request is listening.
 * - `round` makes each state single-use: a retry must name the current round, and claiming bumps it.
 * - A parked call not retried in time is cancelled upstream (`notifications/cancelled`), as is one
 *   whose channel goes away before its step, and the oldest parked one when more than
 *   `MAX_PARKED_CALLS` are; its open server requests are answered with an error first, so the
 *   server is never left waiting.
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import type { CallOutcome, Call, CallSink, LegacyInstance, ServerRequest, InstanceRequest } from './legacy-instance.ts';
import { INPUT_METHODS, type InputRequest } from '../../../shared/era-bridge/input-requests.ts';
import type { JsonRpcErrorShape, LogLevel } from './modern-results.ts';

type Id = string | number;

/** How long a parked call waits for the agent's retry (and its `requestState` stays valid). */
export const PENDING_CALL_MS = 10 * 60 * 1000;

/**
 * Calls one instance keeps parked at most. A parked call is one question the agent is putting to
 * its user, so real use is a handful at once (one per call waiting on the user); each holds an
 * upstream request, the server's pending state, its questions and a timer, outside every cap on
 * requests in flight (the worker's slot is given back with the InputRequiredResult). Past this,
 * parking one more cancels the one parked longest ago upstream: its state then reads `gone`.
 */
export const MAX_PARKED_CALLS = 64;

export type Step = { kind: 'outcome'; outcome: CallOutcome } | { kind: 'failed'; error: unknown } | { kind: 'input'; requests: Map<string, InputRequest> };

/** The modern request currently waiting on the call. */
export interface Attachment {
  notify(notification: { method: string; params?: Record<string, unknown> }): void;
  logLevel: LogLevel | null;
  progressToken: Id | undefined;
}

/** Quiet time after a server's question before the round is answered, and the most it waits in all. */
const INPUT_BURST_QUIET_MS = 15;
const INPUT_BURST_MAX_MS = 150;

/** Error code the server gets for a question nobody will answer. */
const INPUT_UNANSWERED = -32603;

const parkedByInstance = new WeakMap<LegacyInstance, Map<string, BridgedCall>>();

/** The calls parked on `instance`, by handle. */
export function parkedCalls(instance: LegacyInstance): Map<string, BridgedCall> {
  let parked = parkedByInstance.get(instance);
  if (parked === undefined) parkedByInstance.set(instance, (parked = new Map()));
  return parked;
}

/**
 * What a bridged call's instance reports its traffic to: the round attached now (none while the
 * call is parked), read at each use. A class, not an object literal with getters: V8 allocates each
 * literal's getter pair in the old generation, where that pair, dead as soon as its call was, kept
 * the getter's closure, and through it the whole request (the call, its channel, its ledger, the
 * server's answer), alive across every scavenge until the next full GC (issue 17). A class's
 * getters are made once, on its prototype.
 */
class AttachedSink implements CallSink {
  attached: Attachment | null;
  readonly notify: CallSink['notify'];
  readonly input: NonNullable<CallSink['input']>;

  constructor(attached: Attachment, notify: CallSink['notify'], input: NonNullable<CallSink['input']>) {
    this.attached = attached;
    this.notify = notify;
    this.input = input;
  }

  get logLevel(): LogLevel | null {
    return this.attached?.logLevel ?? null;
  }

  get parked(): boolean {
    return this.attached === null;
  }
}

export class BridgedCall {
  #handle: string | undefined;
  /** The round the next valid `requestState` names. */
  round = 0;
  readonly #instance: LegacyInstance;
  readonly #call: Call;
  readonly #open = new Map<string, ServerRequest>();
  #keys = 0;
  #end: Step | undefined;
  #wake: (() => void) | null = null;
  readonly #sink: AttachedSink;
  #expiry: NodeJS.Timeout | undefined;
  #done = false;

  constructor(instance: LegacyInstance, request: InstanceRequest, attachment: Attachment) {
    this.#instance = instance;
    this.#sink = new AttachedSink(
      attachment,
      (notification) => this.#notify(notification),
      (serverRequest) => {
        this.#open.set(`${INPUT_METHODS[serverRequest.method]}-${++this.#keys}`, serverRequest);
        this.#wakeUp();
      },
    );
    this.#call = instance.call(request, this.#sink);
    this.#call.outcome.then(
      (outcome) => this.#finish({ kind: 'outcome', outcome }),
      (error: unknown) => this.#finish({ kind: 'failed', error }),
    );
  }

  /** The call's random name, drawn when first asked for: only a call that asks the agent (whose `requestState` names it) ever needs one. */
  get handle(): string {
    return (this.#handle ??= crypto.randomUUID());
  }

  /** The server's questions not answered yet, by key. */
  get openRequests(): Map<string, InputRequest> {
    return new Map([...this.#open].map(([key, { method, params }]) => [key, { method, params }]));
  }

  /** The next step: the outcome once there is one, else the open questions once there are any. */
  async next(): Promise<Step> {
    for (;;) {
      if (this.#end !== undefined) return this.#end;
      if (this.#open.size > 0) {
        await this.#burst();
        if (this.#end !== undefined) return this.#end;
        return { kind: 'input', requests: this.openRequests };
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /**
   * Waits while questions keep coming. A server asking several at once (`Promise.all`) writes
   * them in one burst that may reach the host in several reads: one InputRequiredResult should
   * carry them all, so the agent answers them in one round. (Missing one is not wrong, only
   * slower: the next round would ask it.)
   */
  async #burst(): Promise<void> {
    for (let waited = 0; waited < INPUT_BURST_MAX_MS; waited += INPUT_BURST_QUIET_MS) {
      const open = this.#open.size;
      await new Promise<void>((resolve) => setTimeout(resolve, INPUT_BURST_QUIET_MS));
      if (this.#end !== undefined || this.#open.size === open) return;
    }
  }

  /**
   * Parks the call for the agent's retry; not retried within `ttlMs`, it is cancelled. A call
   * already done (the agent left while its state was sealed, which cancelled it) is not parked:
   * its expiry could not remove it, and it would stay until the instance ended.
   */
  park(ttlMs: number = PENDING_CALL_MS): void {
    if (this.#done) return;
    this.#sink.attached = null;
    const parked = parkedCalls(this.#instance);
    // Parked again after a round: it is now the newest (a Map keeps its first insertion's place).
    parked.delete(this.handle);
    parked.set(this.handle, this);
    this.#clearExpiry();
    this.#expiry = setTimeout(() => this.cancel('The agent did not answer the input requests in time'), ttlMs);
    this.#expiry.unref();
    let waiting = [...parked.values()].filter((call) => call.#sink.attached === null).length;
    for (const call of parked.values()) {
      if (waiting <= MAX_PARKED_CALLS) break;
      if (call.#sink.attached !== null) continue; // a retry holds it: not waiting
      call.cancel(`More than ${MAX_PARKED_CALLS} calls were waiting for input on this server: the oldest was cancelled`);
      waiting -= 1;
    }
  }

  /** A retry takes the call: the round is used up, its channel attached, the answers delivered. */
  claim(attachment: Attachment, responses: Record<string, unknown>): void {
    this.round += 1;
    this.#clearExpiry();
    this.#sink.attached = attachment;
    for (const [key, response] of Object.entries(responses)) {
      const request = this.#open.get(key);
      if (request === undefined) continue;
      this.#open.delete(key);
      request.answer({ result: response });
    }
  }

  /** Answers one open question on the host's own authority (a round that cannot be asked it). */
  answer(key: string, response: { result: unknown } | { error: JsonRpcErrorShape }): void {
    const request = this.#open.get(key);
    this.#open.delete(key);
    request?.answer(response);
  }

  /** The outcome was delivered: the call leaves its instance's parked calls. */
  complete(): void {
    this.#done = true;
    this.#clearExpiry();
    if (this.#handle !== undefined) parkedCalls(this.#instance).delete(this.#handle); // never named, never parked
  }

  /** Answers the open questions with `error` (or a generic one) and cancels the call upstream. */
  cancel(reason: string, error: JsonRpcErrorShape = { code: INPUT_UNANSWERED, message: `The modern agent's request ended: ${reason}` }): void {
    if (this.#done) return;
    this.complete();
    for (const request of this.#open.values()) request.answer({ error });
    this.#open.clear();
    this.#call.cancel(reason);
    // A cancelled call never settles upstream: a round still waiting on it ends here.
    this.#end ??= { kind: 'failed', error: new WireError('invalid-request', `The request was cancelled: ${reason}`) };
    this.#wakeUp();
  }

  #notify(notification: { method: string; params?: Record<string, unknown> }): void {
    const attached = this.#sink.attached;
    if (attached === null) return;
    if (notification.method !== 'notifications/progress') return attached.notify(notification);
    // The instance restored the first request's token; each round's request has its own.
    if (attached.progressToken === undefined) return;
    attached.notify({ ...notification, params: { ...notification.params, progressToken: attached.progressToken } });
  }

  #finish(step: Step): void {
    this.#end = step;
    // A parked call whose server ended has nothing left for a retry: it is gone, not resumable.
    if (step.kind === 'failed' && this.#sink.attached === null) this.complete();
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  #clearExpiry(): void {
    if (this.#expiry !== undefined) clearTimeout(this.#expiry);
    this.#expiry = undefined;
  }
}
