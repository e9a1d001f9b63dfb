/**
 * `x-mcp-header` (2026-07-28 Streamable HTTP, "Custom Headers"): the tool arguments a server
 * asks clients to mirror into `Mcp-Param-{Name}` headers, and the check that the headers a
 * `tools/call` carried match its arguments. Pure functions, no I/O.
 *
 * - An annotation counts only where the spec allows one: on a string, integer or boolean property
 *   reached from the schema root through `properties` keys alone. Anywhere else the tool is
 *   invalid for header mirroring, and nothing of it is checked (a client drops such a tool).
 * - A value present and not null needs its header, equal to it: strings as they are, integers
 *   compared as numbers (`42.0` is `42`), booleans as `true`/`false`. A header for an annotated
 *   argument the call does not carry is a mismatch too. Headers no annotation names are ignored.
 *
 * @module
 */
import { isRecord } from '../records.ts';

export interface AnnotatedArgument {
  /** The header's `{Name}`, lower-case (header names compare case-insensitively). */
  header: string;
  /** The chain of `properties` keys from the root. */
  path: string[];
  type: 'string' | 'integer' | 'boolean';
}

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
const MAX_DEPTH = 16;

/** The annotated arguments of an `inputSchema`; null when an annotation breaks the rules. */
export function annotatedArguments(schema: unknown): AnnotatedArgument[] | null {
  const found: AnnotatedArgument[] = [];
  const valid = walk(schema, [], found, true);
  if (!valid) return null;
  const names = found.map((a) => a.header);
  return new Set(names).size === names.length ? found : null;
}

function walk(node: unknown, path: string[], found: AnnotatedArgument[], reachable: boolean): boolean {
  if (!isRecord(node) || path.length > MAX_DEPTH) return true;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'x-mcp-header') {
      if (!reachable || path.length === 0 || typeof value !== 'string' || !TCHAR.test(value) || !PRIMITIVE.has(node.type as string)) return false;
      found.push({ header: value.toLowerCase(), path, type: node.type as AnnotatedArgument['type'] });
    } else if (key === 'properties' && isRecord(value)) {
      for (const [name, child] of Object.entries(value)) if (!walk(child, [...path, name], found, reachable)) return false;
    } else if (isRecord(value) || Array.isArray(value)) {
      // Anything under another keyword (items, anyOf, $defs, if/then, …) is not statically reachable.
      for (const child of Array.isArray(value) ? value : [value]) if (!walk(child, [...path, key], found, false)) return false;
    }
  }
  return true;
}

/** Why the headers do not match the arguments; undefined when they do. */
export function paramHeaderMismatch(annotated: readonly AnnotatedArgument[], args: unknown, headers: Readonly<Record<string, string>>): string | undefined {
  for (const { header, path, type } of annotated) {
    const value = valueAt(args, path);
    const sent = Object.hasOwn(headers, header) ? headers[header] : undefined;
    const shown = `Mcp-Param-${header}`;
    if (value === undefined || value === null) {
      if (sent !== undefined) return `the ${shown} header is present but arguments.${path.join('.')} is not`;
      continue;
    }
    if (sent === undefined) return `the ${shown} header is missing: arguments.${path.join('.')} is mirrored into it`;
    if (!matches(type, value, sent)) return `${shown} header value '${sent.slice(0, 64)}' does not match body value '${String(value).slice(0, 64)}'`;
  }
  return undefined;
}

/**
 * A decimal number as a header may carry an integer: compared numerically, as the spec advises
 * (`42.0` is 42), but only in decimal: `Number` also reads `0x2A`, `0b101010` and `Infinity`, text
 * an intermediary would not take for the body's value.
 */
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function matches(type: AnnotatedArgument['type'], value: unknown, sent: string): boolean {
  if (type === 'boolean') return (value === true && sent === 'true') || (value === false && sent === 'false');
  if (type === 'integer') return typeof value === 'number' && DECIMAL.test(sent) && Number(sent) === value;
  return typeof value === 'string' && value === sent;
}

function valueAt(args: unknown, path: readonly string[]): unknown {
  let node = args;
  for (const key of path) {
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}
