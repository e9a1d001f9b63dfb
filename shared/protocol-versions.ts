/**
 * The session-era MCP protocol versions, in the SDK's order (`SUPPORTED_PROTOCOL_VERSIONS`,
 * `LATEST_PROTOCOL_VERSION`; `protocol-versions.test.ts` holds them equal), written out here so
 * that neither the worker's `/mcp` aggregate nor the sidecar answering a legacy `initialize` loads
 * the SDK's `types.js`, which builds every MCP zod schema when it is loaded (issue 17: bundle size
 * and the sidecar's idle RSS). Towards an upstream, initialize asks for the latest; an answer with
 * a version not listed here fails the initialize.
 *
 * @module
 */

export const LATEST_PROTOCOL_VERSION = '2025-11-25';

export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [LATEST_PROTOCOL_VERSION, '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

/** The version an agent's `initialize` is answered with: the one it asked for when listed, else the latest. */
export function negotiatedVersion(requested: unknown): string {
  return typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}
