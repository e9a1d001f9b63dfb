/**
 * Connection descriptors: where an MCP server runs. Type-discriminated JSON with kebab-case
 * keys, host-outer / target-inner: the outer descriptor reaches a host, the nested `target`
 * is what runs there.
 *
 * ```json
 * {"type":"user-computer-profile","entity-id":"alice-laptop","target":{"type":"local"}}
 * ```
 *
 * Parsing is done level by level rather than with one recursive zod schema so that a hostile
 * nesting depth is refused before any deep work, and an unknown `type` is named in the error.
 *
 * @module
 */
import { HttpHeadersSchema } from './http-headers-schema.ts';
import * as z from './zod.ts';
import { EntityIdSchema } from './names.ts';
import { joinPath, parseWith, ValidationError } from './validation.ts';

export type LocalDescriptor = { type: 'local' };
export type HttpDescriptor = { type: 'http'; url: string; headers?: Record<string, string> };
export type UserComputerProfileDescriptor = {
  type: 'user-computer-profile';
  'entity-id': string;
  target?: ConnectionDescriptor;
};
export type ReverseHttpDescriptor = { type: 'reverse-http'; 'entity-id': string; target?: ConnectionDescriptor };
export type ConnectionDescriptor =
  | LocalDescriptor
  | HttpDescriptor
  | UserComputerProfileDescriptor
  | ReverseHttpDescriptor;

export const DESCRIPTOR_TYPES = ['local', 'http', 'user-computer-profile', 'reverse-http'] as const;

/** Deepest host-outer/target-inner nesting accepted; real configs use two levels. */
export const MAX_DESCRIPTOR_DEPTH = 4;

const HttpUrlSchema = z.string().check(
  z.url('must be an absolute URL'),
  z.refine((u) => /^https?:\/\//i.test(u), 'must be an http: or https: URL'),
  // fetch refuses such a URL, and quotes it whole in its error: credentials go in "headers".
  z.refine((u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === ''), 'must not carry a user name or password: send credentials in "headers" (e.g. {"Authorization": "Basic …"})'),
);

/** One level of each descriptor type; `target` is parsed recursively by `parseConnectionDescriptor`. */
export const DESCRIPTOR_LEVEL_SCHEMAS = {
  'local': z.strictObject({ type: z.literal('local') }).check(z.describe('The machine the worker runs on (single-machine mode only: switchyard worker --runtime node); as a target: launch the server on that host')),
  'http': z
    .strictObject({
      type: z.literal('http'),
      url: HttpUrlSchema.check(z.describe('Streamable HTTP MCP endpoint')),
      headers: z.optional(HttpHeadersSchema).check(z.describe('Headers sent with every request')),
    })
    .check(z.describe('An HTTP MCP server: edge-direct at the top level, reached from the host as a target')),
  'user-computer-profile': z
    .strictObject({
      type: z.literal('user-computer-profile'),
      'entity-id': EntityIdSchema.check(z.describe('The host, as listed under "hosts"')),
      target: z.optional(z.unknown()).check(z.describe('What runs there: {"type":"local"} (default) or {"type":"http",…}')),
    })
    .check(z.describe('A workstation reached over its sidecar\'s link')),
  'reverse-http': z
    .strictObject({
      type: z.literal('reverse-http'),
      'entity-id': EntityIdSchema.check(z.describe('The host, as listed under "hosts"')),
      target: z.optional(z.unknown()).check(z.describe('What runs there; absent means {"type":"local"}')),
    })
    .check(z.describe('Same as user-computer-profile: a host reached over the link it dialled')),
} as const;

/**
 * Parses a connection descriptor. Throws `ValidationError` (path: message) for anything else.
 * `path` prefixes the issue paths, e.g. `servers.files.executor`.
 */
export function parseConnectionDescriptor(input: unknown, path = ''): ConnectionDescriptor {
  return parseLevel(input, path, 1);
}

function parseLevel(input: unknown, path: string, depth: number): ConnectionDescriptor {
  const at = path === '' ? '(root)' : path;
  if (depth > MAX_DESCRIPTOR_DEPTH) {
    throw new ValidationError('connection descriptor', [
      { path: at, message: `nesting is deeper than ${MAX_DESCRIPTOR_DEPTH} levels` },
    ]);
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationError('connection descriptor', [{ path: at, message: 'must be an object with a "type"' }]);
  }
  const type = (input as { type?: unknown }).type;
  if (typeof type !== 'string' || !(type in DESCRIPTOR_LEVEL_SCHEMAS)) {
    const shown = typeof type === 'string' ? `"${type.slice(0, 64)}"` : String(type);
    throw new ValidationError('connection descriptor', [
      type === undefined
        ? { path: joinPath(['type'], path), message: `is required: one of ${DESCRIPTOR_TYPES.join(', ')}` }
        : { path: joinPath(['type'], path), message: `unknown descriptor type ${shown}: expected one of ${DESCRIPTOR_TYPES.join(', ')}` },
    ]);
  }
  const level = parseWith(DESCRIPTOR_LEVEL_SCHEMAS[type as keyof typeof DESCRIPTOR_LEVEL_SCHEMAS] as z.ZodMiniType<Record<string, unknown>>, input, 'connection descriptor', path);
  if (level.type === 'user-computer-profile' || level.type === 'reverse-http') {
    const { target, ...outer } = level as { target?: unknown } & Record<string, unknown>;
    if (target === undefined) return outer as unknown as ConnectionDescriptor;
    return { ...outer, target: parseLevel(target, joinPath(['target'], path), depth + 1) } as ConnectionDescriptor;
  }
  return level as unknown as ConnectionDescriptor;
}

/** Serializes a descriptor back to its JSON text; parse → serialize is the identity on valid input. */
export function serializeConnectionDescriptor(descriptor: ConnectionDescriptor): string {
  return JSON.stringify(descriptor);
}

/** The host an outer descriptor reaches, or null for `local` and edge-direct `http`. */
export function hostOf(descriptor: ConnectionDescriptor): string | null {
  return descriptor.type === 'user-computer-profile' || descriptor.type === 'reverse-http' ? descriptor['entity-id'] : null;
}

/** What runs on the host: the inner target, `{"type":"local"}` when absent. */
export function innerTargetOf(descriptor: UserComputerProfileDescriptor | ReverseHttpDescriptor): ConnectionDescriptor {
  return descriptor.target ?? { type: 'local' };
}
