/**
 * zod for Switchyard: zod/mini with English messages. zod/mini registers no locale (zod classic
 * registers English on its first schema), so without it every issue would read "Invalid input".
 * Every schema module imports zod from here (the lint holds it), so no module that shows an
 * issue's message to a person can forget the locale.
 *
 * @module
 */
import * as z from 'zod/mini';

/*
 * The English of zod's issues, as zod's own `en` locale (zod/v4/locales/en.js) words them, for
 * the issues Switchyard's schemas can raise. That locale also names 30 string formats (email,
 * uuid, ISO dates, IBAN, …) and the sizes of files, sets and maps, which no schema here checks:
 * the checks below raise only the `url` and `regex` formats, on strings, arrays and numbers; kept
 * out, with zod's helpers for them, they were 0.9 KB of dist/worker.js (issue 17). shared/zod.test.ts holds every message
 * here to the locale's, issue shape by issue shape.
 */

/**
 * The formats the checks below raise, named as zod's locale names them; and `datetime`, which the
 * MCP SDK's schemas (zod classic) check: in a process that holds both, one locale serves them all.
 */
const FORMAT_NOUNS: Record<string, string> = { regex: 'input', url: 'URL', datetime: 'ISO datetime' };
/** Units of the sizes of what has a length (zod's names for the origins). */
const SIZE_UNITS: Record<string, string> = { string: 'characters', array: 'items' };

/** zod's name for the type of a value (`util.parsedType`, which zod/mini does not export on its own). */
function parsedType(value: unknown): string {
  if (typeof value === 'number') return Number.isNaN(value) ? 'nan' : 'number';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object' && Object.getPrototypeOf(value) !== Object.prototype && 'constructor' in value && value.constructor) return (value.constructor as { name: string }).name;
  return typeof value;
}

/** A value as zod's messages quote it (`util.stringifyPrimitive`, `util.joinValues`). */
const quoted = (value: unknown) => (typeof value === 'bigint' ? `${value}n` : typeof value === 'string' ? `"${value}"` : `${String(value)}`);
const quotedList = (values: readonly unknown[], separator: string) => values.map(quoted).join(separator);

function typeName(type: string, input?: unknown): string {
  if (type === 'number' && typeof input === 'number' && !Number.isFinite(input)) return String(input);
  return type === 'nan' ? 'NaN' : type;
}

export const englishIssueMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      return `Invalid input: expected ${typeName(issue.expected)}, received ${typeName(parsedType(issue.input), issue.input)}`;
    case 'invalid_value':
      if (issue.values.length === 1) return `Invalid input: expected ${quoted(issue.values[0])}`;
      return `Invalid option: expected one of ${quotedList(issue.values, '|')}`;
    case 'too_big': {
      const adj = issue.exact ? 'exactly ' : issue.inclusive ? '<=' : '<';
      const unit = SIZE_UNITS[issue.origin ?? ''];
      if (unit !== undefined) return `Too big: expected ${issue.origin ?? 'value'} to have ${adj}${issue.maximum.toString()} ${unit}`;
      return `Too big: expected ${issue.origin ?? 'value'} to be ${adj}${issue.maximum.toString()}`;
    }
    case 'too_small': {
      const adj = issue.exact ? 'exactly ' : issue.inclusive ? '>=' : '>';
      const unit = SIZE_UNITS[issue.origin];
      if (unit !== undefined) return `Too small: expected ${issue.origin} to have ${adj}${issue.minimum.toString()} ${unit}`;
      return `Too small: expected ${issue.origin} to be ${adj}${issue.minimum.toString()}`;
    }
    case 'invalid_format': {
      const format = issue as z.core.$ZodIssueInvalidStringFormat & { prefix?: string; suffix?: string; includes?: string };
      if (format.format === 'starts_with') return `Invalid string: must start with "${format.prefix}"`;
      if (format.format === 'ends_with') return `Invalid string: must end with "${format.suffix}"`;
      if (format.format === 'includes') return `Invalid string: must include "${format.includes}"`;
      if (format.format === 'regex') return `Invalid string: must match pattern ${format.pattern}`;
      return `Invalid ${FORMAT_NOUNS[format.format] ?? issue.format}`;
    }
    case 'not_multiple_of':
      return `Invalid number: must be a multiple of ${issue.divisor}`;
    case 'unrecognized_keys':
      return `Unrecognized key${issue.keys.length > 1 ? 's' : ''}: ${quotedList(issue.keys, ', ')}`;
    case 'invalid_key':
      return `Invalid key in ${issue.origin}`;
    case 'invalid_union':
      if (issue.options && Array.isArray(issue.options) && issue.options.length > 0) return `Invalid discriminator value. Expected ${issue.options.map((o) => `'${o}'`).join(' | ')}`;
      if (issue.inclusive === false) return 'Invalid input: more than one option matched';
      return 'Invalid input';
    case 'invalid_element':
      return `Invalid value in ${issue.origin}`;
    default:
      return 'Invalid input';
  }
};

z.config({ localeError: englishIssueMessage });

export * from 'zod/mini';

/*
 * The checks below stand in for zod's of the same names (an explicit export wins over
 * `export *`): each of zod's is a class with its own issue plumbing, and with zod's URL,
 * string-format and number-format machinery they were 6 KB of dist/worker.js (issue 17), for
 * what these do on `superRefine`, which the schemas use anyway. Each raises the issues zod's does, so the messages
 * are the same, runs when zod's does, and leaves the value as zod's does; shared/zod.test.ts
 * holds them to zod's own over a corpus, in the positions the schemas use them.
 */

type Check<T> = z.core.$ZodCheck<T>;

/** The fields every issue of a check shares: its input, and the check's own message when it has one. */
const issueOf = (input: unknown, message: string | undefined) => ({ input, ...(message !== undefined ? { message } : {}) });

/** `z.url(message)`: an absolute URL once trimmed; the value is kept trimmed and without tabs or newlines, as the URL parser reads it. */
export function url(message: string): Check<string> {
  return z.superRefine((value: string, ctx) => {
    const trimmed = value.trim();
    if (URL.canParse(trimmed)) ctx.value = trimmed.replace(/[\t\n\r]/g, '');
    else ctx.addIssue({ code: 'invalid_format', format: 'url', input: value, message });
  });
}

/** `z.int(message?)`: a safe integer; a fraction ends the checks that follow, as zod's does. Documented as an integer (`npm run docs`). */
export function int(message?: string): Check<number> {
  const check = z.superRefine((value: number, ctx) => {
    const issue = issueOf(value, message);
    if (!Number.isInteger(value)) ctx.addIssue({ ...issue, code: 'invalid_type', expected: 'int', continue: false });
    else if (value > Number.MAX_SAFE_INTEGER) ctx.addIssue({ ...issue, code: 'too_big', origin: 'int', maximum: Number.MAX_SAFE_INTEGER, inclusive: true });
    else if (value < Number.MIN_SAFE_INTEGER) ctx.addIssue({ ...issue, code: 'too_small', origin: 'int', minimum: Number.MIN_SAFE_INTEGER, inclusive: true });
  });
  check._zod.onattach.push((schema) => {
    schema._zod.bag.format = 'safeint';
  });
  return check;
}

/** `z.regex(pattern, message?)`; as zod's, the message may come as `{ message }` or `{ error }`, and `abort` ends the checks that follow. */
export function regex(pattern: RegExp, params?: string | { message?: string; error?: string; abort?: boolean }): Check<string> {
  const { message = undefined, abort = false } = typeof params === 'string' ? { message: params } : { message: params?.error ?? params?.message, abort: params?.abort };
  return z.superRefine((value: string, ctx) => {
    pattern.lastIndex = 0;
    if (pattern.test(value)) return;
    ctx.addIssue({ ...issueOf(value, message), origin: 'string', code: 'invalid_format', format: 'regex', pattern: pattern.toString(), continue: !abort } as z.core.$ZodRawIssue);
  });
}

function bound(limit: number, inclusive: boolean, upper: boolean, message: string | undefined): Check<number> {
  return z.superRefine((value: number, ctx) => {
    if (upper ? (inclusive ? value <= limit : value < limit) : inclusive ? value >= limit : value > limit) return;
    const issue = { ...issueOf(value, message), origin: 'number', inclusive };
    ctx.addIssue(upper ? { ...issue, code: 'too_big', maximum: limit } : { ...issue, code: 'too_small', minimum: limit });
  });
}

/** `z.lte(limit, message?)`. */
export const lte = (limit: number, message?: string) => bound(limit, true, true, message);
/** `z.gte(limit, message?)`. */
export const gte = (limit: number, message?: string) => bound(limit, true, false, message);
/** `z.positive(message?)`: more than 0. */
export const positive = (message?: string) => bound(0, false, false, message);
/** `z.nonnegative(message?)`: 0 or more. */
export const nonnegative = (message?: string) => bound(0, true, false, message);

type Lengthy = { length: number };

/**
 * Code points, not UTF-16 units, as zod counts a string's length; counted, as zod does, only when
 * the units alone cannot tell (a code point is one or two units).
 */
function lengthOf(value: Lengthy, limit: number, upper: boolean): number {
  const units = value.length;
  if (typeof value !== 'string' || (upper ? units <= limit : units < limit || units >= limit * 2)) return units;
  let count = 0;
  for (const _ of value) count++;
  return count;
}

function lengthBound(limit: number, upper: boolean, message: string | undefined): Check<Lengthy> {
  const check = z.superRefine((value: Lengthy, ctx) => {
    const length = lengthOf(value, limit, upper);
    if (upper ? length <= limit : length >= limit) return;
    const issue = { ...issueOf(value, message), origin: Array.isArray(value) ? 'array' : typeof value === 'string' ? 'string' : 'unknown', inclusive: true };
    ctx.addIssue(upper ? { ...issue, code: 'too_big', maximum: limit } : { ...issue, code: 'too_small', minimum: limit });
  });
  // As zod's: it runs whenever the value has a length, even after an issue that did not end the checks (an array with a bad element);
  // and named as zod's, so that an array too long for it is refused before any element is parsed.
  Object.assign(check._zod.def, upper ? { check: 'max_length', maximum: limit } : { check: 'min_length', minimum: limit });
  check._zod.def.when = (payload) => payload.value != null && (payload.value as Partial<Lengthy>).length !== undefined;
  return check;
}

/** `z.maxLength(limit, message?)`: at most `limit` characters (code points) or items. */
export const maxLength = (limit: number, message?: string) => lengthBound(limit, true, message);
/** `z.minLength(limit, message?)`: at least `limit` characters (code points) or items. */
export const minLength = (limit: number, message?: string) => lengthBound(limit, false, message);

/**
 * A schema built on its first use rather than when its module is evaluated. A zod schema is a few
 * objects and a dozen bound functions, and the worker's bundle defines some 480: those read only
 * on a path a request may never take (link frames, OAuth, the modern era's `_meta` and results,
 * 286 of them) are built through this, which took 4% off a cold Deno process's CPU to its first
 * answer (issue 17). The config's schemas are not: a worker parses its config as it starts.
 */
export function lazily<T>(build: () => T): () => T {
  let built: T | undefined;
  return () => (built ??= build());
}
