/**
 * The modern (2026-07-28) wire shapes Switchyard produces when it serves a modern request from a
 * legacy server (the host's legacy instance, the worker's edge-direct legacy session): what it
 * takes out of the request before forwarding, and what it adds to the
 * answer on the way back. Pure functions, no I/O.
 *
 * - `_meta` keys under `io.modelcontextprotocol/` are the modern per-request fields; a legacy
 *   server knows none of them, so they are stripped (`progressToken` stays: legacy speaks it).
 * - Every result gets `resultType: "complete"`; the cacheable ones (`CacheableResult` in the
 *   schema) get `ttlMs: 0` and `cacheScope: "private"` unless the server set them: a legacy server
 *   says nothing of caching, and its answers are per agent (the instance is).
 * - A modern peer must never see `-32002` (legacy resource not found): it becomes `-32602` with
 *   `data.uri`, and a `-32602` to `resources/read` without `data.uri` gets it.
 * - `server/discover` is answered from the instance's `initialize` result.
 *
 * @module
 */
import * as z from './zod.ts';
import { copyRecord, isRecord } from './records.ts';

/** The one modern revision this host serves. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** What the host says it is when the agent's request names no clientInfo. */
export const HOST_CLIENT_INFO = { name: 'switchyard-host', version: '0.1.0' } as const;

const MODERN_META_PREFIX = 'io.modelcontextprotocol/';
const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
const LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel';
const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
export const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';

/** Methods whose complete result is a `CacheableResult` (schema.ts). */
const CACHEABLE_METHODS = new Set(['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read']);

/** The client requests of 2026-07-28 a legacy instance can serve (`subscriptions/listen` is not in this slice). */
export const FORWARDED_METHODS = new Set(['completion/complete', 'prompts/get', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'tools/call', 'tools/list']);

/** RFC 5424 severities, least severe first, as MCP's `LoggingLevel`. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const logLevelSchema = z.lazily(() => z.enum(LOG_LEVELS));

const implementationSchema = z.lazily(() => z.looseObject({ name: z.string().check(z.minLength(1), z.maxLength(256)), version: z.string().check(z.maxLength(256)) }));
export type Implementation = z.infer<ReturnType<typeof implementationSchema>>;

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };

/** What a modern request's `_meta` asks of the host, read leniently: the worker has validated it. */
export interface ModernRequestMeta {
  logLevel: LogLevel | null;
  /** What the agent can answer in this request (`{}` when none, or when it is not an object). */
  clientCapabilities: Record<string, unknown>;
  progressToken: string | number | undefined;
}

export function modernMetaOf(params: unknown): ModernRequestMeta {
  const meta = metaOf(params);
  const capabilities = meta?.[CLIENT_CAPABILITIES_KEY];
  const token = meta?.progressToken;
  return {
    logLevel: parsedOrNull(logLevelSchema(), meta?.[LOG_LEVEL_KEY]),
    clientCapabilities: isRecord(capabilities) ? capabilities : {},
    progressToken: typeof token === 'string' || typeof token === 'number' ? token : undefined,
  };
}

/**
 * A modern request's `clientInfo`, null when absent or malformed. Not part of `modernMetaOf`: the
 * host needs it only to start an instance, which most requests find running, and its parse was
 * about 15 µs of the sidecar's CPU per request (issue 17).
 */
export function clientInfoOf(params: unknown): Implementation | null {
  return parsedOrNull(implementationSchema(), metaOf(params)?.[CLIENT_INFO_KEY]);
}

/**
 * `schema`'s output for `value`, null when it fails. An absent key fails either schema, and is not
 * handed to zod: a failed parse builds its error, most of the time of a modern request's `_meta`
 * read, which usually has no `logLevel` (issue 17).
 */
function parsedOrNull<T>(schema: z.ZodMiniType<T>, value: unknown): T | null {
  if (value === undefined) return null;
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** `params` without the modern `_meta` keys (and without `_meta` when nothing else was in it). */
export function stripModernMeta(params: unknown): Params | undefined {
  if (!isRecord(params)) return undefined;
  const meta = metaOf(params);
  if (meta === undefined) return params;
  const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !key.startsWith(MODERN_META_PREFIX)));
  const { _meta: _dropped, ...rest } = params;
  // Added to the rest itself, not spread into a copy of it (`copyRecord`): it is a new object already.
  if (Object.keys(kept).length > 0) rest._meta = kept;
  return rest;
}

/** True when a `notifications/message` at `level` passes a request's `logLevel` threshold. */
export function logLevelPasses(level: unknown, threshold: LogLevel): boolean {
  const index = LOG_LEVELS.indexOf(level as LogLevel);
  return index >= 0 && index >= LOG_LEVELS.indexOf(threshold);
}

/** A legacy result as a modern one for `method`; `serverInfo` goes in its `_meta`, as the spec asks of every result. */
export function modernResult(method: string, result: unknown, serverInfo?: Implementation): Record<string, unknown> {
  // Copies that take keys of their own, so not `{ ...result }` (see `copyRecord`).
  const out = copyRecord(isRecord(result) ? result : {});
  out.resultType ??= 'complete';
  if (serverInfo !== undefined) {
    const meta = isRecord(out._meta) ? copyRecord(out._meta) : {};
    meta[SERVER_INFO_KEY] ??= serverInfo;
    out._meta = meta;
  }
  if (CACHEABLE_METHODS.has(method) && out.resultType === 'complete') {
    out.ttlMs ??= 0;
    out.cacheScope ??= 'private';
  }
  return out;
}

export interface JsonRpcErrorShape {
  code: number;
  message: string;
  data?: unknown;
}

const LEGACY_RESOURCE_NOT_FOUND = -32002;
/** `URLElicitationRequiredError` (2025-11-25 only); the host turns it into a URL elicitation round where it can (`input-rounds.ts`). */
export const URL_ELICITATION_REQUIRED = -32042;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
/** The sub-range 2026-07-28 keeps for codes it defines (basic/index, Error Codes), and the ones it defines there. */
const SPEC_RESERVED = { from: -32099, to: -32020 } as const;
const SPEC_DEFINED = new Set([-32020, -32021, -32022]);

/**
 * A legacy error as a modern one for `method` with `params` (the forwarded ones). A modern agent
 * never sees a code 2026-07-28 forbids (-32002, -32042) or one it keeps for errors it has not
 * defined (-32023 to -32099): such an error becomes -32603, its message kept and its code in
 * `data.serverCode`. The three it defines (-32020 to -32022) mean what it says only from a
 * modern server: from `server` `legacy` they are the server's own codes and go the same way;
 * from `either` (an HTTP server answering statelessly, maybe a modern one) they pass.
 */
export function modernError(method: string, params: unknown, error: JsonRpcErrorShape, server: 'legacy' | 'either'): JsonRpcErrorShape {
  const reserved = error.code >= SPEC_RESERVED.from && error.code <= SPEC_RESERVED.to;
  if (reserved && (server === 'legacy' || !SPEC_DEFINED.has(error.code))) {
    const data = isRecord(error.data) ? error.data : error.data === undefined ? {} : { serverData: error.data };
    return { code: INTERNAL_ERROR, message: error.message, data: { ...data, serverCode: error.code } };
  }
  const uri = isRecord(params) && typeof params.uri === 'string' ? params.uri : undefined;
  const notFound = error.code === LEGACY_RESOURCE_NOT_FOUND;
  if (!notFound && !(error.code === INVALID_PARAMS && method === 'resources/read')) return error;
  const data = isRecord(error.data) ? error.data : {};
  return {
    code: INVALID_PARAMS,
    message: notFound ? 'Resource not found' : error.message,
    data: { ...data, ...(uri !== undefined && data.uri === undefined ? { uri } : {}) },
  };
}

/** The legacy `initialize` result the host holds for an instance. */
export const initializeResultSchema = z.lazily(() =>
  z.looseObject({
    protocolVersion: z.string(),
    capabilities: z.record(z.string(), z.unknown()),
    serverInfo: implementationSchema(),
    instructions: z.optional(z.string()),
  }),
);
export type InitializeResult = z.infer<ReturnType<typeof initializeResultSchema>>;

/** `server/discover`'s result, built from the instance's `initialize` result. */
export function discoverResult(initialize: InitializeResult): Record<string, unknown> {
  return {
    resultType: 'complete',
    supportedVersions: [MODERN_PROTOCOL_VERSION],
    capabilities: initialize.capabilities,
    ...(initialize.instructions !== undefined ? { instructions: initialize.instructions } : {}),
    ttlMs: 0,
    cacheScope: 'private',
    _meta: { [SERVER_INFO_KEY]: initialize.serverInfo },
  };
}

function metaOf(params: unknown): Record<string, unknown> | undefined {
  if (!isRecord(params)) return undefined;
  return isRecord(params._meta) ? params._meta : undefined;
}
