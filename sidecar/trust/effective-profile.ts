/**
 * The effective trust profile: one profile file with all its bases composed in, in the shape the
 * compiler and the tool-call authorizer read. Built from a file by {@link effectiveFromFile} and
 * combined by `compose.ts`.
 *
 * "Says nothing" is kept distinct from "grants nothing" because composition needs it: a profile
 * with no filesystem grants and no network list does not constrain the process at all (DESIGN §5),
 * `environment: undefined` says nothing about the environment, `allowedToolCalls: undefined` adds
 * no allow rule. Each of these is the neutral element of composition (see `compose.ts`).
 *
 * @module
 */
import type { FilesystemGrant } from './filesystem-grants.ts';
import { normalizeGrants } from './filesystem-grants.ts';
import type { JsonSchema } from './json-schema.ts';
import type { NetworkCapability, TrustProfileFile } from './profile-schema.ts';

export type { FilesystemGrant } from './filesystem-grants.ts';
export type { NetworkCapability } from './profile-schema.ts';

/** Tool-call allow rule: a schema, or all / any of nested rules. Evaluated over `{toolName, input}`. */
export type ToolCallCondition =
  | { readonly schema: JsonSchema }
  | { readonly all: readonly ToolCallCondition[] }
  | { readonly any: readonly ToolCallCondition[] };

export interface EnvironmentRule {
  /** Names copied from the sidecar's own environment when set there. */
  readonly inherit: readonly string[];
  /** Fixed values; they win over inherited values of the same name. */
  readonly set: Readonly<Record<string, string>>;
}

export interface EffectiveProfile {
  /** Normalised grants (see `filesystem-grants.ts`); empty = nothing beyond the read-only system. */
  readonly filesystemPaths: readonly FilesystemGrant[];
  /**
   * `undefined` = says nothing (unconstrained when nothing else contains the process, no network
   * when a grant does, see {@link containedNetwork}); `[]` = no network; otherwise the single widest
   * capability (`['loopback']` or `['internet-client']`), since `internet-client` includes loopback.
   */
  readonly networkCapabilities: readonly NetworkCapability[] | undefined;
  /** `undefined` = no rule; a contained process then gets only `HOME` and its server's own env. */
  readonly environment: EnvironmentRule | undefined;
  /** `undefined` = every tool call passes the allow check. */
  readonly allowedToolCalls: ToolCallCondition | undefined;
  /** A tool call matching any of these is denied. */
  readonly restrictedToolCalls: readonly JsonSchema[];
}

/** The network breadth order: 0 `[]` < 1 `loopback` < 2 `internet-client` < 3 unconstrained. */
export function networkLevel(capabilities: readonly NetworkCapability[] | undefined): number {
  if (capabilities === undefined) return 3;
  if (capabilities.includes('internet-client')) return 2;
  return capabilities.includes('loopback') ? 1 : 0;
}

export function networkFromLevel(level: number): readonly NetworkCapability[] | undefined {
  return level >= 3 ? undefined : level === 2 ? ['internet-client'] : level === 1 ? ['loopback'] : [];
}

/**
 * What a contained process's network is: its own network namespace always (DESIGN §5), so a
 * profile that says nothing of the network (`undefined`) but is contained because it grants paths
 * gets no network, never the host's. `none` and `loopback` both have only a private loopback;
 * `internet-client` adds user-mode networking that reaches what the host reaches, except the
 * host's own loopback.
 */
export type ContainedNetwork = 'none' | 'loopback' | 'internet-client';

/** The network a contained process under `profile` gets (see {@link ContainedNetwork}). */
export function containedNetwork(profile: EffectiveProfile): ContainedNetwork {
  const level = networkLevel(profile.networkCapabilities ?? []);
  return level >= 2 ? 'internet-client' : level === 1 ? 'loopback' : 'none';
}

/** Whether a profile constrains the process at all: DESIGN §5's containment rule, used by `containmentRequired`. */
export function constrainsProcess(profile: EffectiveProfile): boolean {
  return profile.filesystemPaths.length > 0 || profile.networkCapabilities !== undefined;
}

/**
 * The effective profile of one file taken alone (its bases are composed in by the store).
 *
 * @param file A parsed profile file.
 * @returns Its effective profile: grants normalised, network reduced to its widest capability
 *   (`[]` when the file grants paths and has no `network-capabilities`).
 */
export function effectiveFromFile(file: TrustProfileFile): EffectiveProfile {
  const grants = (file['filesystem-paths'] ?? []).map((p) => ({
    sourcePath: p['source-path'],
    targetPath: p['target-path'] ?? p['source-path'],
    accessMode: p['access-mode'],
  }));
  // A file that grants paths and says nothing of the network is contained, and a contained
  // process never gets the host's network: its silence means no network (DESIGN §5).
  const network = file['network-capabilities'] ?? (grants.length > 0 ? [] : undefined);
  const env = file.environment;
  const allowed = file['allowed-mcp-tool-call-schemas'] ?? [];
  return {
    filesystemPaths: normalizeGrants(grants),
    networkCapabilities: network === undefined ? undefined : networkFromLevel(networkLevel(network)),
    environment: env === undefined ? undefined : { inherit: [...new Set(env.inherit ?? [])], set: { ...env.set } },
    allowedToolCalls: allowed.length === 0 ? undefined : allowed.length === 1 ? { schema: allowed[0]! } : { any: allowed.map((schema) => ({ schema })) },
    restrictedToolCalls: file['restricted-mcp-tool-call-schemas'] ?? [],
  };
}

/** A profile that says nothing: the neutral element of both composition modes. */
export const NEUTRAL_PROFILE: EffectiveProfile = {
  filesystemPaths: [],
  networkCapabilities: undefined,
  environment: undefined,
  allowedToolCalls: undefined,
  restrictedToolCalls: [],
};
