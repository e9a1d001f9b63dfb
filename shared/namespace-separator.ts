/**
 * The separator of a server's name and a tool's (or prompt's) on `/mcp`, `files__read`, and the
 * rule it sets for server names: a name that holds it could not be told apart from a namespaced
 * one. Here rather than in the worker so that the sidecar, which carries no worker code, refuses
 * such a name in an mcp.json in the worker config's words.
 *
 * @module
 */

export const NAMESPACE_SEPARATOR = '__';

/** Why a server name holding {@link NAMESPACE_SEPARATOR} is refused, wherever it is defined. */
export const NAMESPACE_SEPARATOR_MESSAGE = `server names must not contain "${NAMESPACE_SEPARATOR}": /mcp uses it to separate the server from the tool name`;
