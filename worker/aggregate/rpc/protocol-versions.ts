/**
 * The session-era MCP protocol versions the aggregate speaks, on both sides: the same list, in
 * the same order, as the MCP SDK it used to be built on (`SUPPORTED_PROTOCOL_VERSIONS`,
 * `LATEST_PROTOCOL_VERSION`; `protocol-versions.test.ts` holds them equal), so agents and
 * servers negotiate exactly as before.
 *
 * - Towards an upstream, initialize asks for the latest; an answer with a version not listed here
 *   fails the initialize.
 * - Towards the agent, a version listed here is answered with itself, any other with the latest.
 *
 * @module
 */

export const LATEST_PROTOCOL_VERSION = '2025-11-25';

export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [LATEST_PROTOCOL_VERSION, '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

/** The version the aggregate answers an agent's initialize with. */
export function negotiatedVersion(requested: unknown): string {
  return typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}
