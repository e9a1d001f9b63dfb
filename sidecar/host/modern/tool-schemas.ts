/**
 * The tool schemas the host checks `Mcp-Param-*` headers against (`x-mcp-header.ts`), cached per
 * server instance: the cache lives on the host, beside the instance, so a `tools/call` through
 * any worker instance is checked against the same list (DESIGN §8), and the worker keeps none.
 *
 * - A modern server's list is kept for the `ttlMs` its `tools/list` result gives (0: fetched again
 *   for each call).
 * - A legacy server says nothing of caching: its list is kept until it sends
 *   `notifications/tools/list_changed` (the instance counts those, `toolListVersion`).
 * - A tool the cached list does not name is looked up once more in a fresh list (it may be new).
 * - The list is read as the host's own request on the instance (every page, within a bound);
 *   a failure to read it is no answer either way: the call is then checked against no
 *   annotations, and the server judges its arguments itself.
 *
 * @module
 */
import type { Logger } from '../../log.ts';
import { hostCall } from './host-call.ts';
import { MODERN_PROTOCOL_VERSION } from './modern-results.ts';
import { isModernServer, type ServerInstance } from './server-instance.ts';
import { annotatedArguments, paramHeaderMismatch, type AnnotatedArgument } from '../../../shared/era-bridge/x-mcp-header.ts';
import { isRecord } from '../../../shared/records.ts';

interface Cached {
  tools: Map<string, AnnotatedArgument[] | null>;
  /** ms since the epoch (modern), or the instance's list version it was read at (legacy). */
  expires: number;
  version: number;
}

const MAX_PAGES = 32;
const cache = new WeakMap<ServerInstance, Cached>();

/** The annotated arguments of `tool` on `instance`: [] when it has none, null when its annotations are invalid or it is unknown. */
export async function toolAnnotations(instance: ServerInstance, tool: string, log: Logger, now: () => number = Date.now): Promise<AnnotatedArgument[] | null> {
  let cached = fresh(instance, now());
  if (cached === undefined || !cached.tools.has(tool)) cached = await refresh(instance, log, now);
  return cached?.tools.get(tool) ?? null;
}

function fresh(instance: ServerInstance, at: number): Cached | undefined {
  const cached = cache.get(instance);
  if (cached === undefined) return undefined;
  if (isModernServer(instance)) return cached.expires > at ? cached : undefined;
  return cached.version === instance.toolListVersion ? cached : undefined;
}

async function refresh(instance: ServerInstance, log: Logger, now: () => number): Promise<Cached | undefined> {
  const version = isModernServer(instance) ? 0 : instance.toolListVersion;
  const tools = new Map<string, AnnotatedArgument[] | null>();
  let ttlMs = Number.POSITIVE_INFINITY;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const params: Record<string, unknown> = { ...(cursor !== undefined ? { cursor } : {}) };
    if (isModernServer(instance)) params._meta = { 'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} };
    const outcome = await hostCall(instance, { method: 'tools/list', params });
    if (outcome === null || !('result' in outcome) || !isRecord(outcome.result)) {
      log.debug('The tool list for the Mcp-Param check could not be read', { server: instance.server });
      return undefined;
    }
    const result = outcome.result;
    for (const tool of Array.isArray(result.tools) ? result.tools : []) {
      if (isRecord(tool) && typeof tool.name === 'string') tools.set(tool.name, annotatedArguments(tool.inputSchema));
    }
    if (typeof result.ttlMs === 'number') ttlMs = Math.min(ttlMs, result.ttlMs);
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  const cached: Cached = { tools, expires: now() + (Number.isFinite(ttlMs) ? ttlMs : 0), version };
  cache.set(instance, cached);
  return cached;
}

const HEADER_MISMATCH = -32020;

/** The -32020 error for a `tools/call` whose `Mcp-Param-*` headers do not match its arguments; null when they do. */
export async function toolCallHeaderError(instance: ServerInstance, params: unknown, headers: Readonly<Record<string, string>>, log: Logger): Promise<{ code: number; message: string; data: { reason: 'invalid-request' } } | null> {
  const name = isRecord(params) ? params.name : undefined;
  if (typeof name !== 'string') return null;
  const annotated = await toolAnnotations(instance, name, log);
  if (annotated === null || annotated.length === 0) return null;
  const problem = paramHeaderMismatch(annotated, isRecord(params) ? params.arguments : undefined, headers);
  return problem === undefined ? null : { code: HEADER_MISMATCH, message: `Header mismatch: ${problem}`, data: { reason: 'invalid-request' } };
}
