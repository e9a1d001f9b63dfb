/**
 * The one nesting check for JSON from outside (agent bodies, link frames, server output).
 *
 * V8's `JSON.parse` reads 100,000 levels without trouble, but everything recursive that touches
 * the value afterwards (`JSON.stringify`, zod, ajv, @cfworker/json-schema) overflows the stack
 * somewhere between 1,000 and 10,000 levels, and where that exception lands decides whether a
 * request hangs, is answered with a misleading error, or takes a process down. So each entry
 * point runs this right after `JSON.parse`, before anything recursive sees the value, and answers
 * `invalid-request` when it says no. It walks with an explicit stack, so it cannot overflow
 * itself, and it stops at the first container past the limit.
 *
 * @module
 */

/** Deepest nesting accepted anywhere: objects and arrays inside each other, the outermost counting 1. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether `value` nests objects or arrays more than `max` levels deep (`{}` is 1, `{"a": []}` 2,
 * a scalar 0). A cyclic value counts as too deep rather than looping forever.
 *
 * @param value A parsed JSON value.
 * @param max The deepest nesting allowed.
 * @returns True when some container sits deeper than `max`.
 * @example
 * ```ts
 * exceedsDepth(JSON.parse('[[[]]]'), 2); // true
 * exceedsDepth({ a: { b: 1 } }, 2); // false
 * ```
 */
export function exceedsDepth(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max < 1) return true;
  // Containers and their depths interleaved on one stack, objects read with `for…in` (no array
  // of values per object): this runs on every link frame and body, and the two stacks and
  // `Object.values` were most of its time (issue 17). A parsed JSON value has no inherited
  // enumerable keys, so `for…in` sees exactly its own values.
  const pending: unknown[] = [value, 1];
  while (pending.length > 0) {
    const depth = pending.pop() as number;
    const container = pending.pop() as Record<string, unknown> | unknown[];
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const child = container[i];
        if (typeof child !== 'object' || child === null) continue;
        if (depth >= max) return true;
        pending.push(child, depth + 1);
      }
    } else {
      for (const key in container) {
        const child = container[key];
        if (typeof child !== 'object' || child === null) continue;
        if (depth >= max) return true;
        pending.push(child, depth + 1);
      }
    }
  }
  return false;
}

/**
 * The id of a JSON-RPC message read without recursing (a batch or a message without one: null),
 * so a refusal of a too-deep message can still answer the request it carried.
 */
export function shallowRequestId(value: unknown): string | number | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

export type ParsedJson =
  | { kind: 'json'; value: unknown }
  | { kind: 'not-json' }
  /** `id` as `shallowRequestId` reads it; `request` tells a request (it has a method) from a response. */
  | { kind: 'too-deep'; id: string | number | null; request: boolean };

/**
 * `JSON.parse` and the nesting check in one step, the way every entry point reads outside JSON:
 * nothing recursive sees a value deeper than `MAX_JSON_DEPTH`, and a too-deep one is still read far
 * enough to answer the request it carried.
 *
 * @example
 * ```ts
 * parseJsonWithinDepth('{"id":1,"method":"x"}'); // { kind: 'json', value: { id: 1, method: 'x' } }
 * ```
 */
export function parseJsonWithinDepth(text: string, max: number = MAX_JSON_DEPTH): ParsedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'not-json' };
  }
  if (!exceedsDepth(value, max)) return { kind: 'json', value };
  const request = typeof value === 'object' && value !== null && !Array.isArray(value) && 'method' in value;
  return { kind: 'too-deep', id: shallowRequestId(value), request };
}
