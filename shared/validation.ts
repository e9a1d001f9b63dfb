/**
 * One error type for every parser at a boundary: a list of `path: message` problems.
 *
 * @module
 */
import * as z from './zod.ts';
import { LocalError, WireError } from './errors.ts';
import { closestKey, knownKeysAt } from './key-suggestions.ts';

export interface ValidationIssue {
  /** Dotted path into the input, `(root)` for the whole value. */
  path: string;
  message: string;
}

/** Thrown by every `parse*` function in Switchyard when the input does not fit its schema. */
export class ValidationError extends LocalError {
  override readonly name = 'ValidationError';
  readonly issues: readonly ValidationIssue[];

  constructor(what: string, issues: readonly ValidationIssue[]) {
    super('invalid-input', `Invalid ${what}: ${issues.map(formatIssue).join('; ')}`);
    this.issues = issues;
  }

  /** The same problem as a wire error with reason `invalid-request` (for link and HTTP replies). */
  toWireError(): WireError {
    return new WireError('invalid-request', this.message);
  }
}

export function formatIssue(issue: ValidationIssue): string {
  return `${issue.path}: ${issue.message}`;
}

export function joinPath(path: readonly PropertyKey[], prefix = ''): string {
  const parts = path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)));
  const joined = parts.reduce((acc, part) => (part.startsWith('[') || acc === '' ? acc + part : `${acc}.${part}`), prefix);
  return joined === '' ? '(root)' : joined;
}

/** What a type is called in a message: "a string", "an object", "null". */
function typeNoun(type: string): string {
  if (type === 'null' || type === 'undefined') return type;
  if (type === 'int') return 'an integer';
  if (type === 'record') return 'an object';
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** The JSON type of a value, as a message names it. */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * The words of the issues a schema leaves to zod and that zod words for programmers ("Too small:
 * expected number to be >0"): a missing key is required, a value of another type says what it must
 * be and what it is, a bound says the bound, and a value outside a set names the set. A value is
 * never quoted back: a config's wrong value may be a credential typed in the wrong place. A
 * schema's own message wins over this (zod asks this map only for an issue that has none).
 */
const issueMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int' && typeof issue.input === 'number') return 'must be an integer';
      return `must be ${typeNoun(issue.expected)} (got ${typeNoun(typeOf(issue.input))})`;
    case 'too_small':
      return boundMessage(issue.origin, issue.exact === true ? 'exactly' : issue.inclusive === false ? 'more than' : 'at least', issue.minimum);
    case 'too_big':
      return boundMessage(issue.origin, issue.exact === true ? 'exactly' : issue.inclusive === false ? 'less than' : 'at most', issue.maximum);
    case 'invalid_value':
      return issue.input === undefined ? `is required: ${oneOf(issue.values)}` : `must be ${oneOf(issue.values)}`;
    default:
      return undefined;
  }
};

/** `must be at most 600`, `must be at least 1 character long`, `must have at most 8 items`. */
function boundMessage(origin: string, how: string, limit: number | bigint): string {
  const n = Number(limit);
  if (origin === 'string') return `must be ${how} ${n} character${n === 1 ? '' : 's'} long`;
  if (origin === 'array' || origin === 'set') return `must have ${how} ${n} item${n === 1 ? '' : 's'}`;
  return `must be ${how} ${n}`;
}

/** `"a"`, `"a" or "b"`, `one of "a", "b" or "c"`. */
function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => JSON.stringify(v) ?? String(v));
  if (shown.length <= 1) return shown[0] ?? 'nothing';
  const list = `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}`;
  return shown.length === 2 ? list : `one of ${list}`;
}

const pathKey = (path: readonly PropertyKey[]) => JSON.stringify(path.map((p) => (typeof p === 'symbol' ? String(p) : p)));

/**
 * Turns zod issues into `path: message` problems, naming unknown keys one by one.
 *
 * With the `schema` they came from, an unknown key that is a near miss of a key the schema takes
 * there says which (`unknown key (did you mean "max-sessions"?)`), and a required key a typo stands
 * for is not reported again as missing. Issues carry their input only when parsed with
 * `reportInput` (as {@link safeParseWith} does); without it no key is taken for missing.
 *
 * A value that is not a URL at all gets that one problem: what scheme it must have says nothing more.
 */
export function issuesFromZod(error: z.core.$ZodError, prefix = '', schema?: z.core.$ZodType): ValidationIssue[] {
  const suggestions = new Map<z.core.$ZodIssue, Map<string, string>>();
  const meant = new Set<string>();
  const notUrls = new Set<string>();
  for (const issue of error.issues) {
    if (issue.code === 'invalid_format' && issue.format === 'url') notUrls.add(pathKey(issue.path));
    if (issue.code !== 'unrecognized_keys' || schema === undefined) continue;
    const present = new Set(typeof issue.input === 'object' && issue.input !== null ? Object.keys(issue.input) : []);
    const known = knownKeysAt(schema, issue.path).filter((key) => !present.has(key));
    const byKey = new Map<string, string>();
    for (const key of issue.keys) {
      const closest = closestKey(key, known);
      if (closest === undefined) continue;
      byKey.set(key, closest);
      meant.add(pathKey([...issue.path, closest]));
    }
    suggestions.set(issue, byKey);
  }
  const out: ValidationIssue[] = [];
  for (const issue of error.issues) {
    const at = pathKey(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const closest = suggestions.get(issue)?.get(key);
        out.push({ path: joinPath([...issue.path, key], prefix), message: closest === undefined ? 'unknown key' : `unknown key (did you mean "${closest}"?)` });
      }
      continue;
    }
    const missing = issue.code === 'invalid_type' && 'input' in issue && issue.input === undefined;
    if (missing && meant.has(at)) continue;
    if (notUrls.has(at) && !(issue.code === 'invalid_format' && issue.format === 'url')) continue;
    out.push({ path: joinPath(issue.path, prefix), message: issue.message });
  }
  return out;
}

/**
 * `schema.safeParse` with every problem as `path: message` in Switchyard's words (any zod 4
 * schema, mini or classic): the issues of {@link issuesFromZod}, worded by {@link issueMessage}.
 */
export function safeParseWith<T>(schema: z.core.$ZodType<T>, input: unknown, prefix = ''): { success: true; data: T } | { success: false; issues: ValidationIssue[] } {
  const result = z.safeParse(schema, input, { error: issueMessage, reportInput: true });
  if (result.success) return { success: true, data: result.data };
  return { success: false, issues: issuesFromZod(result.error, prefix, schema) };
}

/** {@link safeParseWith} that throws `ValidationError` with every problem found. */
export function parseWith<T>(schema: z.core.$ZodType<T>, input: unknown, what: string, prefix = ''): T {
  const result = safeParseWith(schema, input, prefix);
  if (result.success) return result.data;
  throw new ValidationError(what, result.issues);
}
