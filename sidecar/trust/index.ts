/**
 * Trust profiles on the launch host: files, resolution by reference and revision, composition,
 * and tool-call authorization. Containment compilation lives in `../sandbox/`.
 *
 * @module
 */
export { canonicalJson } from './canonical-json.ts';
export { composeProfile, narrow, widen, type ComposedBase } from './compose.ts';
export {
  constrainsProcess,
  effectiveFromFile,
  NEUTRAL_PROFILE,
  type EffectiveProfile,
  type EnvironmentRule,
  type FilesystemGrant,
  type NetworkCapability,
  type ToolCallCondition,
} from './effective-profile.ts';
export { intersectGrants, normalizeGrants, unionGrants, type AccessMode } from './filesystem-grants.ts';
export type { JsonSchema } from './json-schema.ts';
export {
  NETWORK_CAPABILITIES,
  TRUST_PROFILE_REF_PATTERN,
  trustProfileFileSchema,
  trustProfileRefSchema,
  type InheritanceMode,
  type TrustProfileFile,
} from './profile-schema.ts';
export { TrustProfileStore, type ResolvedTrustProfile, type TrustProfileListing } from './profile-store.ts';
export { filterToolCall, ToolCallAuthorizer, type ToolCallDecision } from './tool-call-authorizer.ts';
