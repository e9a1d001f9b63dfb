/**
 * The per-request `_meta` of a modern (2026-07-28) request: the keys the spec names, and their
 * zod schemas written from the spec's `schema.ts` (`RequestMetaObject`, `ClientCapabilities`,
 * `Implementation`, `LoggingLevel`).
 *
 * The schemas are loose where the spec's types are open (`MetaObject` and `ClientCapabilities`
 * admit keys beyond the known ones), strict only on what the spec marks required: a request
 * without `protocolVersion` or `clientCapabilities` is malformed (-32602, HTTP 400). `logLevel` is
 * checked on its own, later in the validation order (notes §1, step 8), so a request that is wrong
 * in two ways gets the error the suite expects first.
 *
 * @module
 */
import * as z from '../../shared/zod.ts';
import { LOG_LEVELS } from '../../shared/modern-results.ts';

export const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
export const LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel';

const loggingLevelSchema = z.lazily(() => z.enum(LOG_LEVELS));

/**
 * The required part of `RequestMetaObject`, plus the optional `clientInfo` (schema.ts
 * `Implementation`: name and version required, the rest optional) and `progressToken`.
 * `ClientCapabilities` is an open set, `{}` meaning none; its known members are objects when
 * present. Built on first use: nearly every request's `_meta` is recognized without it.
 */
export const requestMetaSchema = z.lazily(() => {
  const JsonObject = z.record(z.string(), z.unknown());
  const Implementation = z.looseObject({
    name: z.string(),
    version: z.string(),
    title: z.optional(z.string()),
    description: z.optional(z.string()),
    websiteUrl: z.optional(z.string()),
    icons: z.optional(z.array(z.looseObject({ src: z.string() }))),
  });
  const ClientCapabilities = z.looseObject({
    experimental: z.optional(z.record(z.string(), JsonObject)),
    roots: z.optional(JsonObject),
    sampling: z.optional(z.looseObject({ context: z.optional(JsonObject), tools: z.optional(JsonObject) })),
    elicitation: z.optional(z.looseObject({ form: z.optional(JsonObject), url: z.optional(JsonObject) })),
    extensions: z.optional(z.record(z.string(), JsonObject)),
  });
  return z.looseObject({
    [PROTOCOL_VERSION_KEY]: z.string().check(z.minLength(1)),
    [CLIENT_CAPABILITIES_KEY]: ClientCapabilities,
    [CLIENT_INFO_KEY]: z.optional(Implementation),
    progressToken: z.optional(z.union([z.string(), z.number()])),
  });
});

export type RequestMeta = z.infer<ReturnType<typeof requestMetaSchema>>;

/** The request's `params._meta` if it is an object, else undefined. */
export function metaOf(params: unknown): Record<string, unknown> | undefined {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

/** Whether the params carry the modern claim: a `_meta` protocol version, whatever its value. */
export function hasModernClaim(params: unknown): boolean {
  return metaOf(params)?.[PROTOCOL_VERSION_KEY] !== undefined;
}

export type MetaCheck = { ok: true; meta: RequestMeta } | { ok: false; problem: string };

/** Checks the required `_meta` fields; the problem names the first field that is wrong. */
export function parseRequestMeta(params: unknown): MetaCheck {
  const meta = metaOf(params);
  if (meta === undefined) return { ok: false, problem: 'params._meta is missing: a modern request carries its protocol version and client capabilities there' };
  if (plainlyValid(meta)) return { ok: true, meta: meta as RequestMeta };
  const parsed = requestMetaSchema().safeParse(meta);
  if (parsed.success) return { ok: true, meta: parsed.data };
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  const missing = issue.code === 'invalid_type' && meta[String(issue.path[0])] === undefined;
  return { ok: false, problem: `params._meta["${field}"] ${missing ? 'is missing' : `is invalid: ${issue.message}`}` };
}

/** Checks `logLevel` when present; undefined when fine. */
export function logLevelProblem(meta: RequestMeta): string | undefined {
  const level = meta[LOG_LEVEL_KEY];
  if (level === undefined || loggingLevelSchema().safeParse(level).success) return undefined;
  return `params._meta["${LOG_LEVEL_KEY}"] is not a logging level: use one of ${LOG_LEVELS.join(', ')}`;
}

/** The members of `ClientCapabilities` and `Implementation` that zod checks when present. */
const CAPABILITY_MEMBERS = ['experimental', 'roots', 'sampling', 'elicitation', 'extensions'] as const;
const IMPLEMENTATION_OPTIONALS = ['title', 'description', 'websiteUrl', 'icons'] as const;

/**
 * The `_meta` nearly every request sends, which `requestMetaSchema` accepts, recognized by hand:
 * a version string, capabilities with none of the members the schema checks (`{}`), a
 * `clientInfo` of just a name and a version, a string or number progress token. The zod walk of
 * these nested loose objects was ~58 µs of each modern call under Deno (issue 17). Anything else
 * (false) goes to the schema, which also words the problem.
 */
function plainlyValid(meta: Record<string, unknown>): boolean {
  const version = meta[PROTOCOL_VERSION_KEY];
  if (typeof version !== 'string' || version.length === 0) return false;
  const capabilities = meta[CLIENT_CAPABILITIES_KEY];
  if (!isPlainObject(capabilities) || CAPABILITY_MEMBERS.some((key) => capabilities[key] !== undefined)) return false;
  const info = meta[CLIENT_INFO_KEY];
  if (info !== undefined && (!isPlainObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string' || IMPLEMENTATION_OPTIONALS.some((key) => info[key] !== undefined))) return false;
  const token = meta.progressToken;
  return token === undefined || typeof token === 'string' || typeof token === 'number';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
