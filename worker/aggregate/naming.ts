/**
 * Namespacing of tool and prompt names on the aggregate `/mcp` endpoint.
 *
 * Scheme: `<server>__<name>`, e.g. `files__read_file`. A name is split at the **first** `__`:
 * everything before is the server, everything after is the server's own name, which may itself
 * contain `__`. Server names cannot contain `__` (the config rejects them), so the split is
 * unambiguous. Server names use `[A-Za-z0-9_-]`, so a namespaced name stays within the MCP tool
 * name alphabet whenever the server's own name does.
 *
 * MCP tool names are at most 128 characters. When `<server>__<name>` would be longer, the name
 * part is cut and suffixed with `-` and 8 hex digits of a hash of the full name:
 * `<server>__<prefix>-<hash>`. The aggregate remembers every alias it handed out (from list
 * results), so calls route back to the original name; the hash keeps aliases of two long names
 * with the same prefix apart.
 *
 * `<server>__unavailable` is the placeholder tool of a server that is offline or refused.
 *
 * @module
 */

import { NAMESPACE_SEPARATOR } from '../../shared/namespace-separator.ts';

export const MAX_NAME_LENGTH = 128;
/** Name part of the placeholder tool listed for a server that could not be reached. */
export const UNAVAILABLE_TOOL = 'unavailable';

/** 32-bit FNV-1a as 8 hex digits: stable, synchronous and enough to separate aliases. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** `<server>__<name>`, shortened with a hash suffix when longer than 128 characters. */
export function namespacedName(server: string, name: string): string {
  const full = `${server}${NAMESPACE_SEPARATOR}${name}`;
  if (full.length <= MAX_NAME_LENGTH) return full;
  const room = MAX_NAME_LENGTH - server.length - NAMESPACE_SEPARATOR.length - 9;
  return `${server}${NAMESPACE_SEPARATOR}${name.slice(0, Math.max(room, 0))}-${fnv1a(name)}`;
}

/** Splits at the first `__`; null when there is none or either side is empty. */
export function splitNamespacedName(full: string): { server: string; name: string } | null {
  const at = full.indexOf(NAMESPACE_SEPARATOR);
  if (at <= 0 || at + NAMESPACE_SEPARATOR.length >= full.length) return null;
  return { server: full.slice(0, at), name: full.slice(at + NAMESPACE_SEPARATOR.length) };
}

/**
 * The names handed out for one kind (tools or prompts) in one agent session: resolves a
 * namespaced name back to its server and original name, including shortened aliases.
 */
export class NameTable {
  readonly #aliases = new Map<string, { server: string; name: string }>();

  /** Namespaces `name` of `server` and remembers the mapping. */
  add(server: string, name: string): string {
    const full = namespacedName(server, name);
    this.#aliases.set(full, { server, name });
    return full;
  }

  /** Forgets every name of one server (before its list is refreshed). */
  clearServer(server: string): void {
    for (const [full, entry] of this.#aliases) if (entry.server === server) this.#aliases.delete(full);
  }

  /** The server and original name behind a namespaced name, or null when it is not one. */
  resolve(full: string): { server: string; name: string } | null {
    return this.#aliases.get(full) ?? splitNamespacedName(full);
  }
}
