/**
 * Canonical JSON: object keys sorted, no whitespace. Two files that differ only in key order or
 * formatting encode the same, so a revision changes only when the content does.
 *
 * @module
 */

/**
 * Encodes a JSON value with object keys sorted (`Array.prototype.sort` order) at every depth.
 *
 * @param value A value made of JSON types (as returned by `JSON.parse`).
 * @returns The canonical text.
 * @example Key order does not matter
 * ```ts
 * canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }) === '{"a":[{"c":3,"d":2}],"b":1}';
 * ```
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    const record = value as Record<string, unknown>;
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
