/**
 * The separator of a server's name and a tool's (or prompt's) on `/mcp`, `files__read`, and the
 * rule it sets for server names: a name that holds it, or ends in `_`, could not be told apart
 * from a namespaced one. Here rather than in the worker so that the sidecar, which carries no worker code, refuses
 * such a name in an mcp.json in the worker config's words.
 *
 * @module
 */

export const NAMESPACE_SEPARATOR = '__';

/** Why a server name that could not be read back from a namespaced one is refused, wherever it is defined. */
export const NAMESPACE_SEPARATOR_MESSAGE = `server names must not contain "${NAMESPACE_SEPARATOR}" nor end in "_": /mcp joins the server and tool names with "${NAMESPACE_SEPARATOR}" and reads the server back up to the first one`;

/**
 * True when `name` joined to a tool's with the separator could not be split back at its first
 * one: it holds the separator, or ends in `_` (`a_` + `__` + `x` is `a___x`, which reads as
 * server `a`, tool `_x`).
 */
export function isAmbiguousServerName(name: string): boolean {
  return name.includes(NAMESPACE_SEPARATOR) || name.endsWith('_');
}
