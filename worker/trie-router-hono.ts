/**
 * The `Hono` every app of the worker is built from: Hono's base with its TrieRouter alone, its
 * answers remembered per method and path.
 *
 * `new Hono()` from 'hono' routes with a SmartRouter that carries both the RegExpRouter and the
 * TrieRouter and picks one at the first request; dist/worker.js then holds both (issue 17: the
 * TrieRouter alone is 4.5 KB less). The TrieRouter supports every path the worker registers and
 * answers exactly what the RegExpRouter would (the SmartRouter falls back to it for the patterns the
 * RegExpRouter cannot take). scripts/lint.mjs keeps worker code from constructing 'hono''s own `Hono`.
 *
 * Its trie search was 15-20 µs of every request under Deno (issue 17), for the same few paths
 * again and again (an agent's `/servers/<name>/mcp`), so `MemoRouter` keeps each answer: a match
 * is a pure function of method and path once the routes are added, and Hono only reads it (the
 * handlers and the raw param values; decoding happens per read). The memo holds at most
 * `MAX_REMEMBERED` paths of at most `MAX_REMEMBERED_PATH` characters and starts over when full,
 * so paths anyone makes up cost memory only up to that bound, and a route added later clears it.
 *
 * @module
 */
import { HonoBase, type HonoOptions } from 'hono/hono-base';
import { TrieRouter } from 'hono/router/trie-router';
import type { Result } from 'hono/router';
import type { BlankEnv, BlankSchema, Env, Schema } from 'hono/types';

/** Most method-and-path answers one router remembers. */
export const MAX_REMEMBERED = 256;
/**
 * Longest path whose answer is remembered: the worker's own paths are far shorter, and the memo is
 * consulted before auth, so long made-up paths would otherwise pin up to `MAX_REMEMBERED` times
 * the runtime's URL limit.
 */
export const MAX_REMEMBERED_PATH = 256;

export class MemoRouter<T> extends TrieRouter<T> {
  override name = 'MemoRouter';
  readonly #memo = new Map<string, Result<T>>();

  override add(method: string, path: string, handler: T): void {
    this.#memo.clear();
    super.add(method, path, handler);
  }

  override match(method: string, path: string): Result<T> {
    if (path.length > MAX_REMEMBERED_PATH) return super.match(method, path);
    const key = `${method} ${path}`;
    let result = this.#memo.get(key);
    if (result === undefined) {
      result = super.match(method, path);
      if (this.#memo.size >= MAX_REMEMBERED) this.#memo.clear();
      this.#memo.set(key, result);
    }
    return result;
  }
}

export class Hono<E extends Env = BlankEnv, S extends Schema = BlankSchema, BasePath extends string = '/'> extends HonoBase<E, S, BasePath> {
  constructor(options: HonoOptions<E> = {}) {
    super({ ...options, router: options.router ?? new MemoRouter() });
  }
}
