/**
 * How the modern (2026-07-28) aggregate on `/mcp` merges what the agent's servers answered into
 * one answer. Pure functions, no I/O.
 *
 * - Caching hints: the smallest upstream `ttlMs` (a missing one counts as 0); a server that could
 *   not answer makes the merged list stale at once (`ttlMs: 0`), so the agent asks again soon. The
 *   `cacheScope` is always `private`, whatever the servers said: the merged answer is this agent's
 *   (only its servers, their failures as placeholder tools, instructions naming them), and a
 *   `public` one may be served by a shared cache to any other agent (spec, server/utilities/caching).
 * - `server/discover`: the features any server offers, with `listChanged` and `subscribe` where any
 *   server announces them (the aggregate's listen stream merges theirs), the modern versions
 *   Switchyard serves, Switchyard's own serverInfo, and instructions naming the servers,
 *   unavailable ones with their reason.
 * - Lists: tool and prompt names namespaced `<server>__<name>` (`naming.ts`); resources and
 *   templates keep their URIs; an unavailable server's tools are its placeholder tool.
 *
 * @module
 */
import { aggregateInstructions, unavailableTool, type Unavailable } from '../availability.ts';
import { namespacedName } from '../naming.ts';
import { SUPPORTED_MODERN_VERSIONS } from '../../modern/headers.ts';
import { isRecord } from '../../../shared/records.ts';

type Result = Record<string, unknown>;

export interface Answered {
  server: string;
  result: Result;
}

export type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list';

/** Each list method's array field. */
export const LIST_FIELD: Record<ListMethod, 'tools' | 'prompts' | 'resources' | 'resourceTemplates'> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

export const AGGREGATE_SERVER_INFO = { name: 'switchyard', version: '0.1.0' } as const;
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
/** The server features the aggregate passes on, and the flags of each it keeps. */
const FEATURES = { tools: ['listChanged'], prompts: ['listChanged'], resources: ['listChanged', 'subscribe'], completions: [], logging: [] } as const;

export function cacheHints(results: readonly Result[], anyFailed: boolean): { ttlMs: number; cacheScope: 'private' } {
  const ttls = results.map((r) => (typeof r.ttlMs === 'number' && Number.isInteger(r.ttlMs) && r.ttlMs >= 0 ? r.ttlMs : 0));
  const ttlMs = anyFailed || ttls.length === 0 ? 0 : Math.min(...ttls);
  return { ttlMs, cacheScope: 'private' };
}

export function mergeDiscover(answered: readonly Answered[], failed: ReadonlyArray<[string, Unavailable]>): Result {
  const capabilities: Record<string, Record<string, true>> = {};
  for (const { result } of answered) {
    const offered = isRecord(result.capabilities) ? result.capabilities : {};
    for (const [feature, flags] of Object.entries(FEATURES)) {
      const own = offered[feature];
      if (!isRecord(own)) continue;
      const merged = (capabilities[feature] ??= {});
      for (const flag of flags) if (own[flag] === true) merged[flag] = true;
    }
  }
  const connected = answered.map(({ server, result }) => ({ server, ...(typeof result.instructions === 'string' ? { instructions: result.instructions } : {}) }));
  return {
    resultType: 'complete',
    supportedVersions: [...SUPPORTED_MODERN_VERSIONS],
    capabilities,
    instructions: aggregateInstructions({ connected, failed }),
    ...cacheHints(answered.map((a) => a.result), failed.length > 0),
    _meta: { [SERVER_INFO_KEY]: AGGREGATE_SERVER_INFO },
  };
}

export function mergeList(method: ListMethod, answered: readonly Answered[], failed: ReadonlyArray<[string, Unavailable]>): Result {
  const field = LIST_FIELD[method];
  const items: unknown[] = [];
  for (const { server, result } of answered) {
    for (const item of Array.isArray(result[field]) ? (result[field] as unknown[]) : []) {
      if (!isRecord(item)) continue;
      const named = field === 'tools' || field === 'prompts';
      items.push(named && typeof item.name === 'string' ? { ...item, name: namespacedName(server, item.name) } : item);
    }
  }
  if (field === 'tools') for (const [server, failure] of failed) items.push(unavailableTool(server, failure));
  return {
    resultType: 'complete',
    [field]: items,
    ...cacheHints(answered.map((a) => a.result), failed.length > 0),
    _meta: { [SERVER_INFO_KEY]: AGGREGATE_SERVER_INFO },
  };
}
