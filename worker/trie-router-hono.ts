/**
 * The `Hono` every app of the worker is built from: Hono's base with its TrieRouter alone.
 *
 * `new Hono()` from 'hono' routes with a SmartRouter that carries both the RegExpRouter and the
 * TrieRouter and picks one at the first request; dist/worker.js then holds both (issue 17: the
 * TrieRouter alone is 4.5 KB less). The TrieRouter supports every path the worker registers and
 * answers exactly what the RegExpRouter would (the SmartRouter falls back to it for the patterns the
 * RegExpRouter cannot take), and routing costs microseconds beside a request's JSON and I/O.
 * scripts/lint.mjs keeps worker code from constructing 'hono''s own `Hono`.
 *
 * @module
 */
import { HonoBase, type HonoOptions } from 'hono/hono-base';
import { TrieRouter } from 'hono/router/trie-router';
import type { BlankEnv, BlankSchema, Env, Schema } from 'hono/types';

export class Hono<E extends Env = BlankEnv, S extends Schema = BlankSchema, BasePath extends string = '/'> extends HonoBase<E, S, BasePath> {
  constructor(options: HonoOptions<E> = {}) {
    super({ ...options, router: options.router ?? new TrieRouter() });
  }
}
