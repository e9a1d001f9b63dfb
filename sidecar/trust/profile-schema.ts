/**
 * The file format of `DIR/trust-profiles/<ref>.json` (DESIGN §4), as a zod schema.
 *
 * Every key is kebab-case and every object is strict, so a typo such as `network-capability` is an
 * error (`network-capability: unknown key`) instead of a silently unconstrained profile. Paths are
 * normalised here (`/a/b/../c/` → `/a/c`) so composition and revisions never see two spellings of
 * one directory; relative paths are rejected because the sidecar's working directory is not the
 * user's. Reference names are file names, checked with {@link TRUST_PROFILE_REF_PATTERN}, which
 * admits no `/` and no leading `.`, so a reference can never leave the profiles folder.
 *
 * @module
 */
import { posix } from 'node:path';
import { z } from 'zod';
import { ProfileRefSchema } from '../../shared/names.ts';
import { type JsonSchema, schemaProblem } from './json-schema.ts';

/** Network capabilities a profile may list. Anything else is rejected when the file is parsed. */
export const NETWORK_CAPABILITIES = ['loopback', 'internet-client'] as const;
export type NetworkCapability = (typeof NETWORK_CAPABILITIES)[number];

/** A trust profile reference: the one rule the worker's config and the link request use too. */
export const trustProfileRefSchema = ProfileRefSchema;

/** `/a/b/../c/` → `/a/c`; the root stays `/`. */
export function normalizeAbsolutePath(path: string): string {
  const normal = posix.normalize(path);
  return normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal;
}

const absolutePathSchema = z
  .string()
  .refine((p) => posix.isAbsolute(p), { error: 'must be an absolute path' })
  .refine((p) => !p.includes('\0'), { error: 'must not contain a NUL character' })
  .transform(normalizeAbsolutePath);

const envNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' });

const jsonSchemaSchema = z.unknown().transform((value, ctx): JsonSchema => {
  if (typeof value !== 'boolean' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON Schema (an object or a boolean)' });
    return z.NEVER;
  }
  const problem = schemaProblem(value as JsonSchema);
  if (problem !== undefined) {
    ctx.addIssue({ code: 'custom', message: `invalid JSON Schema: ${problem}` });
    return z.NEVER;
  }
  return value as JsonSchema;
});

const baseReferenceSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { profile: value } : value),
  z.strictObject(
    {
      profile: trustProfileRefSchema,
      'inheritance-mode': z.enum(['restrictive', 'permissive']).default('restrictive'),
    },
    { error: 'must be a profile name or {"profile", "inheritance-mode"}' },
  ),
);

const filesystemPathSchema = z.strictObject({
  'source-path': absolutePathSchema.describe('Absolute path on the launch host'),
  'target-path': absolutePathSchema.optional().describe('Where it appears inside the sandbox; defaults to source-path'),
  'access-mode': z.enum(['read-only', 'read-write']).describe('read-only or read-write'),
});

export const trustProfileFileSchema = z.strictObject({
  description: z.string().optional().describe('Shown by switchyard sidecar profiles'),
  'base-trust-profiles': z
    .array(baseReferenceSchema)
    .optional()
    .describe('Profiles this one composes with: a name (restrictive) or {"profile", "inheritance-mode": "restrictive" | "permissive"}'),
  'filesystem-paths': z.array(filesystemPathSchema).optional().describe('Paths the server may use; any grant makes the profile contained'),
  'network-capabilities': z
    .array(z.enum(NETWORK_CAPABILITIES))
    .optional()
    .describe(
      'Absent: unconstrained, or no network when the profile grants paths; [] no network; "loopback": a private loopback only; ' +
        '"internet-client": outbound connections through user-mode networking (slirp4netns), never the host\'s loopback',
    ),
  environment: z
    .strictObject({
      inherit: z.array(envNameSchema).optional().describe('Variable names copied from the sidecar environment'),
      set: z
        .record(envNameSchema, z.string().refine((v) => !v.includes('\0'), { error: 'must not contain a NUL character' }))
        .optional()
        .describe('Variables set to fixed values (win over inherited ones and the server entry)'),
    })
    .optional()
    .describe('Environment of a contained server: empty plus these'),
  'allowed-mcp-tool-call-schemas': z
    .array(jsonSchemaSchema)
    .optional()
    .describe('JSON Schemas over {toolName, input}; when present a tools/call must match'),
  'restricted-mcp-tool-call-schemas': z
    .array(jsonSchemaSchema)
    .optional()
    .describe('JSON Schemas over {toolName, input}; a tools/call matching any is denied (denied-by-policy)'),
});

/** A parsed profile file: bare base names already expanded to `{profile, inheritance-mode: restrictive}`. */
export type TrustProfileFile = z.output<typeof trustProfileFileSchema>;
export type BaseReference = TrustProfileFile extends { 'base-trust-profiles'?: (infer B)[] } ? B : never;
export type InheritanceMode = BaseReference['inheritance-mode'];
