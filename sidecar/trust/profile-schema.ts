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
import * as z from '../../shared/zod.ts';
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

const absolutePathSchema = z.pipe(
  z.string().check(
    z.refine((p) => posix.isAbsolute(p), { error: 'must be an absolute path' }),
    z.refine((p) => !p.includes('\0'), { error: 'must not contain a NUL character' }),
  ),
  z.transform(normalizeAbsolutePath),
);

const envNameSchema = z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' }));

const jsonSchemaSchema = z.custom<JsonSchema>().check(
  z.superRefine((value, ctx) => {
    if (typeof value !== 'boolean' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON Schema (an object or a boolean)' });
      return;
    }
    const problem = schemaProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `invalid JSON Schema: ${problem}` });
  }),
);

const baseReferenceSchema = z.pipe(
  z.transform((value: unknown) => (typeof value === 'string' ? { profile: value } : value)),
  z.strictObject(
    {
      profile: trustProfileRefSchema,
      'inheritance-mode': z._default(z.enum(['restrictive', 'permissive']), 'restrictive'),
    },
    { error: 'must be a profile name or {"profile", "inheritance-mode"}' },
  ),
);

const filesystemPathSchema = z.strictObject({
  'source-path': absolutePathSchema.check(z.describe('Absolute path on the launch host')),
  'target-path': z.optional(absolutePathSchema).check(z.describe('Where it appears inside the sandbox; defaults to source-path. A path inside another granted path appears where that one shows it, whatever its own target-path')),
  'access-mode': z.enum(['read-only', 'read-write']).check(z.describe('read-only or read-write')),
});

export const trustProfileFileSchema = z.strictObject({
  description: z.optional(z.string()).check(z.describe('Shown by switchyard sidecar profiles')),
  'base-trust-profiles': z
    .optional(z.array(baseReferenceSchema))
    .check(z.describe('Profiles this one composes with: a name (restrictive) or {"profile", "inheritance-mode": "restrictive" | "permissive"}')),
  'filesystem-paths': z.optional(z.array(filesystemPathSchema)).check(z.describe('Paths the server may use; any grant makes the profile contained')),
  'network-capabilities': z
    .optional(z.array(z.enum(NETWORK_CAPABILITIES)))
    .check(
      z.describe(
        'Absent: unconstrained, or no network when the profile grants paths; [] no network; "loopback": a private loopback only; ' +
          '"internet-client": outbound connections through user-mode networking (slirp4netns), never the host\'s loopback',
      ),
    ),
  environment: z
    .optional(
      z.strictObject({
        inherit: z.optional(z.array(envNameSchema)).check(z.describe('Variable names copied from the sidecar environment')),
        set: z
          .optional(z.record(envNameSchema, z.string().check(z.refine((v) => !v.includes('\0'), { error: 'must not contain a NUL character' }))))
          .check(z.describe('Variables set to fixed values (win over inherited ones and the server entry)')),
      }),
    )
    .check(z.describe('Environment of a contained server: empty plus these')),
  'allowed-mcp-tool-call-schemas': z
    .optional(z.array(jsonSchemaSchema))
    .check(z.describe('JSON Schemas over {toolName, input}; when present a tools/call must match')),
  'restricted-mcp-tool-call-schemas': z
    .optional(z.array(jsonSchemaSchema))
    .check(z.describe('JSON Schemas over {toolName, input}; a tools/call matching any is denied (denied-by-policy)')),
});

/** A parsed profile file: bare base names already expanded to `{profile, inheritance-mode: restrictive}`. */
export type TrustProfileFile = z.output<typeof trustProfileFileSchema>;
export type BaseReference = TrustProfileFile extends { 'base-trust-profiles'?: (infer B)[] } ? B : never;
export type InheritanceMode = BaseReference['inheritance-mode'];
