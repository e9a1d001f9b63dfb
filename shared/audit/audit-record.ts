/**
 * One audit line: what the worker and the sidecar each write for every `tools/call`,
 * `resources/read` and `prompts/get` they pass or refuse, for every refused channel open, and for
 * every refused agent credential; and the worker for every host link request it refuses or takes. Both sides write the same shape, so one query reads both logs;
 * the trace id ties a call's worker line to its sidecar line.
 *
 * Never argument values unless the operator turned `include-arguments` on; never a credential
 * (a refused token is named by nothing or a short fingerprint, see `worker/audit/`).
 *
 * @module
 */
import { isFailureReason, jsonRpcCodeFor } from '../errors.ts';
import { isHostAnswer } from './host-answers.ts';
import { redactUrl } from '../url-redaction.ts';

/** The methods audited one line per call. */
export const AUDITED_METHODS: ReadonlySet<string> = new Set(['tools/call', 'resources/read', 'prompts/get']);

/**
 * `allowed`: passed on (its outcome says how it went); `denied-by-policy`: a trust profile's
 * tool-call rules said no; `refused`: not served for another reason (unknown server, stale
 * profile, host offline, a wrong credential, …), named by `reason`.
 */
export type AuditDecision = 'allowed' | 'denied-by-policy' | 'refused';

export interface AuditRecord {
  /**
   * What happened: a call, a refused channel open (`open`), a refused agent credential
   * (`credential`), a host's link request (`link`: refused, or the host proved its key), a
   * changed config put in force (`config`), or an agent session opened or ended (`session`);
   * a host link that ended is a `link` line with `ended`.
   */
  event: 'call' | 'open' | 'credential' | 'link' | 'config' | 'session';
  /** The agent, when known (a refused credential names none). */
  agent: string | null;
  server: string | null;
  /** The host's entity id, when the server runs on one. */
  host: string | null;
  /** The JSON-RPC method (`tools/call`, …; `initialize` for a legacy session's open). */
  method: string | null;
  /** `tools/call`: the tool, as the server names it. */
  tool?: string;
  /** `resources/read`: the resource URI. */
  uri?: string;
  /** `prompts/get`: the prompt's name. */
  prompt?: string;
  decision: AuditDecision;
  /**
   * `ok`; `input-required`: a modern call's round that asks the agent for input (an
   * `InputRequiredResult`), not its result, which ends the line of the retry that carries the
   * answers; or `error` with `reason` (a stable reason, `tool-error` for an `isError` result,
   * `rpc-error` otherwise).
   */
  outcome: 'ok' | 'input-required' | 'error';
  reason?: string;
  /** The JSON-RPC error code of an error answer. */
  errorCode?: number;
  /**
   * The agent cancelled the call, and an answer came anyway within the grace a cancelled line waits
   * (`CallLedger.cancel`): the server ignored the cancellation or had already answered, so the
   * call ran, and `outcome` is how it went.
   */
  cancelRequested?: true;
  /** From the request's arrival to its answer here, in milliseconds. */
  durationMs: number;
  /** `legacy` (sessions) or `modern` (2026-07-28, stateless). */
  era?: 'legacy' | 'modern';
  /** The worker's endpoint: `passthrough` (/servers/:name/mcp) or `aggregate` (/mcp). */
  route?: 'passthrough' | 'aggregate';
  session?: string;
  traceId?: string;
  spanId?: string;
  parentSpanId?: string | null;
  /** The request's arguments, only with `include-arguments`. */
  arguments?: unknown;
  /** A refused credential's fingerprint (see `worker/audit/credential-audit.ts`). */
  fingerprint?: string;
  /** A refused link request: the test it failed (`worker/link/link-upgrade-gate.ts`). */
  check?: string;
  /** A link request that was doctor's probe: verified, then closed, never a link. */
  probe?: true;
  /** A link request refused as `unknown-host`: the entity id it named, which the config does not list (never in `host`). */
  unknownHost?: string;
  /** A config put in force: what it changed, by name, never a value (`worker/config/config-changes.ts`). */
  changes?: object;
  /** A config put in force: the agent sessions it ended. */
  endedSessions?: number;
  /**
   * A session's end: why (`idle`, `limit-reached`, `config-changed`, `grant-revoked`, a failure reason, `closed`,
   * `shutdown`); or a host link's (`closed` by the host, `lost`, `dead`, `replaced`,
   * `config-changed`, `shutdown`, or the reason the worker refused the host's frames for; on the
   * sidecar's own line, `closed` by the worker, `lost`, `dead`, `shutdown` of the sidecar, or the
   * reason it refused the worker's frames for). Its `durationMs` is how long the session was open,
   * or the link up.
   */
  ended?: string;
}

/**
 * The longest text from a request or a peer that a record keeps: a line is one call, whatever a
 * server or an agent puts in a name or a URI.
 */
export const MAX_RECORD_TEXT = 256;

/** `text` cut to `MAX_RECORD_TEXT` characters. */
export function capped(text: string): string {
  return text.length > MAX_RECORD_TEXT ? text.slice(0, MAX_RECORD_TEXT) : text;
}

export interface AnswerTrust {
  /**
   * The answer comes through a Switchyard host that applies trust profiles (the worker's channel
   * to a host or to its local host), so a `denied-by-policy` error the host wrote itself is that
   * host's decision. The host passes a server's answers on unchanged, and a server behind it can
   * write the same error, code and reason included: only an answer marked as the host's own
   * (`host-answers.ts`, carried by the link as `own: true` where the host announced
   * `host-answers`) is taken for the host's decision. Any other, from a server or from a host that
   * cannot mark its answers (an older sidecar), is a call passed on and answered with an error;
   * the host's own line then holds what it decided.
   */
  peerDecides?: boolean;
}

/**
 * What a JSON-RPC answer says about the call it ends. The peer writes the answer, so only a
 * stable reason is kept (anything else is `rpc-error`): a server must not put its own words, of
 * any length, into the record. The decision is `allowed` (this side passed the call on) unless
 * `trust.peerDecides` and the answer is a policy denial the host marked as its own.
 */
export function outcomeOfAnswer(message: unknown, trust: AnswerTrust = {}): Pick<AuditRecord, 'outcome' | 'reason' | 'errorCode' | 'decision'> {
  const m = (typeof message === 'object' && message !== null ? message : {}) as { result?: { isError?: unknown; resultType?: unknown }; error?: { code?: unknown; data?: { reason?: unknown } } };
  if (typeof m.error === 'object' && m.error !== null) {
    const given = typeof m.error.data === 'object' && m.error.data !== null ? m.error.data.reason : undefined;
    const reason = isFailureReason(given) ? given : 'rpc-error';
    const code = Number.isSafeInteger(m.error.code) ? (m.error.code as number) : undefined;
    const denied = trust.peerDecides === true && reason === 'denied-by-policy' && code === jsonRpcCodeFor('denied-by-policy') && isHostAnswer(message);
    return { decision: denied ? 'denied-by-policy' : 'allowed', outcome: 'error', reason, ...(code !== undefined ? { errorCode: code } : {}) };
  }
  if (m.result?.resultType === 'input_required') return { decision: 'allowed', outcome: 'input-required' };
  if (m.result?.isError === true) return { decision: 'allowed', outcome: 'error', reason: 'tool-error' };
  return { decision: 'allowed', outcome: 'ok' };
}

/**
 * A URI without what may be a credential: its userinfo, its query and its fragment (OAuth's
 * implicit flow puts tokens there) become `[redacted]`. Parsed as a URL where it is one; else the
 * userinfo runs to the last `@` before the path, since a password may hold an `@` of its own.
 */
export function withoutCredentials(uri: string): string {
  // Most URIs hold none of these: left as written, and without a parse on every audited read.
  return /[?#@]/.test(uri) ? redactUrl(uri) : uri;
}

/** The call's subject (`tool`, `uri` or `prompt`) and, when asked for, its arguments. */
export function subjectOf(method: string, params: unknown, includeArguments: boolean): Pick<AuditRecord, 'tool' | 'uri' | 'prompt' | 'arguments'> {
  const p = (typeof params === 'object' && params !== null ? params : {}) as { name?: unknown; uri?: unknown; arguments?: unknown };
  const text = (value: unknown) => (typeof value === 'string' ? capped(value) : undefined);
  const subject: Pick<AuditRecord, 'tool' | 'uri' | 'prompt' | 'arguments'> = {};
  // Set one by one, only when defined: every audited call builds one (issue 17).
  const name = method === 'tools/call' || method === 'prompts/get' ? text(p.name) : undefined;
  if (name !== undefined) subject[method === 'tools/call' ? 'tool' : 'prompt'] = name;
  const uri = method === 'resources/read' ? text(typeof p.uri === 'string' ? withoutCredentials(p.uri) : p.uri) : undefined;
  if (uri !== undefined) subject.uri = uri;
  if (includeArguments && p.arguments !== undefined) subject.arguments = p.arguments;
  return subject;
}
