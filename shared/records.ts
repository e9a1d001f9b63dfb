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

/** `value` when it is a JSON object, else undefined (`asRecord(x)?.key` reads a field of untyped JSON). */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}
