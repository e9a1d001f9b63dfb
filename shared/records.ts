/**
 * The one test for a JSON object as parsed data holds it (an object, not null, not an array),
 * which the modules that read untyped JSON (config, JSON-RPC results, key sets) share instead of
 * each keeping its own copy (issue 17).
 *
 * @module
 */

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A shallow copy of a JSON object, as `{ ...record }` makes it (own keys in order, an own
 * `__proto__` key staying an own key), for a copy that then takes keys of its own. On the V8 of
 * Node 20, where the sidecar runs, an object made by a leading spread has a hidden class outside
 * V8's transition tree, so each key added to it afterwards (`copy.x = …`, or `{ ...record, x }`)
 * made a new hidden class in the old generation, for every copy: about 1.3 µs each, and its
 * descriptors outlived every scavenge (three a modern request on the sidecar, issue 17). Built key
 * by key, the copy's keys follow the transitions every such copy shares.
 */
export function copyRecord(record: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(record)) {
    if (key === '__proto__') Object.defineProperty(copy, key, { value: record[key], writable: true, enumerable: true, configurable: true });
    else copy[key] = record[key];
  }
  return copy;
}

/** `value` when it is a JSON object, else undefined (`asRecord(x)?.key` reads a field of untyped JSON). */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}
