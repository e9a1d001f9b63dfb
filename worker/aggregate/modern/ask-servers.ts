/**
 * The modern aggregate's questions to the agent's servers: one request to one server (over a
 * channel of its own, `forwardModern`, its answer read back from the relayed response), or the
 * same request to every server at once, every page of a list read.
 *
 * A server that cannot be reached (its error names a Switchyard failure other than
 * `invalid-request`: host offline, launch failed, timed out, …) is *failed*, with that reason; a
 * server that answers with any other error (method not found: it has no prompts) simply offers
 * nothing. Nothing is kept between requests: each question opens its own channels (DESIGN §8).
 * Asked for the merged lists with a `waitMs`, a server that has not answered by then is *failed*
 * with reason `starting` (a host keeps starting its instance for the agent's next request) and
 * its question is abandoned: one server that never answers must not hold the agent's other ones.
 * A question refused by the agent's own `max-requests-per-agent` (429 `limit-reached`) fails the
 * whole aggregate request with that refusal (thrown as a `WireError`): every question takes a slot,
 * and a healthy server must not read as unavailable, nor the merged answer be cached as stale.
 *
 * @module
 */
import { isFailureReason, WireError, type WireErrorDetail } from '../../../shared/errors.ts';
import type { AgentEntry, WorkerConfig } from '../../config/worker-config.ts';
import { forwardModern, type ModernRouteDeps } from '../../modern/modern-route.ts';
import { STOPPED_WAITING } from '../../modern/modern-relay.ts';
import type { ModernRequest } from '../../modern/validate-request.ts';
import { startingStateless, type Unavailable } from '../availability.ts';
import type { Answered } from './modern-merge.ts';
import { asRecord, isRecord } from '../../../shared/records.ts';
import { backgroundWorkHolder, holdBackgroundWork } from '../../background-work.ts';

export interface AggregateContext {
  /** The agent's HTTP request: its abort ends every question asked for it. */
  request: Request;
  agent: AgentEntry;
  /** The agent's servers that the config defines, in the agent's order. */
  servers: readonly string[];
  config: WorkerConfig;
  deps: ModernRouteDeps;
  /** How long a question to every server waits for each (`aggregate-start-wait-seconds`); for ever when undefined. */
  startWaitMs?: number;
}

export type Asked = { kind: 'result'; result: Record<string, unknown> } | { kind: 'error'; error: { code: number; message: string; data?: unknown } } | { kind: 'failed'; failure: Unavailable };

/** Pages read of one list, at most. */
const MAX_PAGES = 32;

export async function askServer(ctx: AggregateContext, server: string, message: ModernRequest): Promise<Asked> {
  const descriptor = ctx.config.servers[server]!.executor;
  const response = await forwardModern(ctx.request, message, { agent: ctx.agent, server, descriptor, route: 'aggregate' }, ctx.deps);
  const answer = lastMessage(await response.text());
  if (answer === undefined) return { kind: 'failed', failure: { reason: 'server-exited', message: `Server "${server}" gave no answer to ${message.method}` } };
  if (isRecord(answer.result)) return { kind: 'result', result: answer.result };
  const error = isRecord(answer.error) ? answer.error : { code: -32603, message: 'No result' };
  const reason = isRecord(error.data) ? error.data.reason : undefined;
  if (reason === 'limit-reached' && response.status === 429) {
    // The agent's own cap, not the server's state: the whole aggregate request is refused with it.
    const { reason: _r, ...detail } = error.data as Record<string, unknown>;
    throw new WireError('limit-reached', String(error.message), { detail: detail as WireErrorDetail });
  }
  if (isFailureReason(reason) && reason !== 'invalid-request') return { kind: 'failed', failure: { reason, message: String(error.message) } };
  return { kind: 'error', error: error as { code: number; message: string } };
}

/**
 * Asks every server, reading every page; what answered, and what failed with its reason. With
 * `waitMs`, a server not answered by then is failed as `starting` (`askInTime`).
 */
export async function askEveryServer(ctx: AggregateContext, message: ModernRequest, field?: string, waitMs?: number): Promise<{ answered: Answered[]; failed: Array<[string, Unavailable]> }> {
  const answered: Answered[] = [];
  const failed: Array<[string, Unavailable]> = [];
  await Promise.all(ctx.servers.map(async (server) => {
    const ask = (asking: AggregateContext) => (field === undefined ? askServer(asking, server, message) : askAllPages(asking, server, message, field));
    const asked = waitMs === undefined ? await ask(ctx) : await askInTime(ctx, waitMs, ask);
    if (asked.kind === 'result') answered.push({ server, result: asked.result });
    else if (asked.kind === 'failed') failed.push([server, asked.failure]);
  }));
  const order = (server: string) => ctx.servers.indexOf(server);
  answered.sort((a, b) => order(a.server) - order(b.server));
  failed.sort((a, b) => order(a[0]) - order(b[0]));
  return { answered, failed };
}

/**
 * `ask` of one server, answered as failed with reason `starting` if it has not answered within
 * `waitMs`; its question is then abandoned through a request of its own whose signal also follows
 * the agent's: its channel is closed (the host cancels the call) once the relay sees the abort
 * (`ABORT_WATCH_MS`), and its request slot given back then, since the abort's reason
 * (`STOPPED_WAITING`) says the agent did not leave. An abort of the agent's own request keeps the
 * slot for the grace a cancelled call gets (`forwardModern`).
 */
export async function askInTime(ctx: AggregateContext, waitMs: number, ask: (ctx: AggregateContext) => Promise<Asked>): Promise<Asked> {
  const abandon = new AbortController();
  // Only the headers and the signal of the agent's request are read on the way (its body was read already).
  const request = new Request(ctx.request.url, { method: 'POST', headers: ctx.request.headers, signal: AbortSignal.any([ctx.request.signal, abandon.signal]) });
  // Its background work is the agent's request's: on Workers its channel's close is held with it (review of s22).
  const hold = backgroundWorkHolder(ctx.request);
  if (hold !== undefined) holdBackgroundWork(request, hold);
  const starting: Asked = { kind: 'failed', failure: startingStateless(waitMs) };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Asked>((resolve) => (timer = setTimeout(() => resolve(starting), waitMs)));
  const asked = ask({ ...ctx, request });
  try {
    const first = await Promise.race([asked, late]);
    if (first === starting) {
      abandon.abort(STOPPED_WAITING);
      asked.catch(() => {}); // its end is nobody's now
    }
    return first;
  } finally {
    clearTimeout(timer);
  }
}

/** Every page of one server's list, as one result (the smallest ttlMs and the stricter scope of its pages). */
export async function askAllPages(ctx: AggregateContext, server: string, message: ModernRequest, field: string): Promise<Asked> {
  const items: unknown[] = [];
  let first: Record<string, unknown> | undefined;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { cursor: _agentCursor, ...params } = message.params ?? {};
    const asked = await askServer(ctx, server, { ...message, params: { ...params, ...(cursor !== undefined ? { cursor } : {}) } });
    if (asked.kind !== 'result') return first === undefined ? asked : { kind: 'result', result: { ...first, [field]: items } };
    const result = asked.result;
    if (first === undefined) first = result;
    else first = { ...first, ttlMs: Math.min(Number(first.ttlMs ?? 0), Number(result.ttlMs ?? 0)), cacheScope: first.cacheScope === 'public' && result.cacheScope === 'public' ? 'public' : 'private' };
    if (Array.isArray(result[field])) items.push(...(result[field] as unknown[]));
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  const { nextCursor: _next, ...merged } = first ?? {};
  return { kind: 'result', result: { ...merged, [field]: items } };
}

/** The last JSON-RPC message of a relayed answer: the one JSON body, or the last SSE event. */
function lastMessage(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  if (trimmed.startsWith('{')) return parse(trimmed);
  const events = trimmed.split(/\r?\n\r?\n/).map((event) => event.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n')).filter(Boolean);
  return events.length === 0 ? undefined : parse(events.at(-1)!);
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    return asRecord(JSON.parse(text));
  } catch {
    return undefined;
  }
}
