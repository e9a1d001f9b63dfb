/**
 * shared/zod.ts's checks (`url`, `int`, the bounds and lengths) against zod's own checks of those
 * names, which they replace in
 * every schema (issue 17): over a corpus of inputs, in the positions the schemas use them (alone,
 * before refinements and bounds, with and without a message, inside objects), both give the same
 * result, the same value and the same issues with the same messages, and the config reference
 * documents the same types.
 */
import { describe, expect, it } from 'vitest';
import * as zod from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import * as z from './zod.ts';

const URLS: unknown[] = [
  'https://login.example.com/tenant',
  ' https://login.example.com ',
  '\thttps://login.example.com/\n',
  'https://exa\nmple.com/a\tb',
  'http://127.0.0.1:8080',
  'http:example.com',
  'mailto:someone@example.com',
  'urn:isbn:0451450523',
  'https://x.example/ a space',
  'https://[',
  '//x.example/path',
  '/relative/path',
  'not a url',
  '',
  '   ',
  7,
  null,
];
const INTS: unknown[] = [0, -0, 1, 7, 10, 11, -1, 0.5, 1.5, -2.5, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e300, -1e300, Number.NaN, Number.POSITIVE_INFINITY, '3', null];

const OURS = { url: z.url, int: z.int, regex: z.regex, lte: z.lte, gte: z.gte, positive: z.positive, nonnegative: z.nonnegative, maxLength: z.maxLength, minLength: z.minLength };
const ZODS = {
  url: (message: string) => zod.url(message),
  int: (message?: string) => zod.int(message),
  regex: (pattern: RegExp, params?: Parameters<typeof z.regex>[1]) => zod.regex(pattern, params),
  lte: (limit: number, message?: string) => zod.lte(limit, message),
  gte: (limit: number, message?: string) => zod.gte(limit, message),
  positive: (message?: string) => zod.positive(message),
  nonnegative: (message?: string) => zod.nonnegative(message),
  maxLength: (limit: number, message?: string) => zod.maxLength(limit, message),
  minLength: (limit: number, message?: string) => zod.minLength(limit, message),
} as unknown as typeof OURS;
type Build = (c: typeof OURS) => zod.ZodMiniType;

const outcome = (schema: zod.ZodMiniType, input: unknown) => {
  const result = zod.safeParse(schema, input);
  return result.success ? { data: result.data } : { issues: result.error.issues.map((i) => ({ code: i.code, path: i.path, message: i.message })) };
};

function expectSame(build: Build, inputs: unknown[]) {
  const ours = build(OURS);
  const theirs = build(ZODS);
  for (const input of inputs) expect(outcome(ours, input), JSON.stringify(input)).toEqual(outcome(theirs, input));
}

describe('url and int, beside zod\'s', () => {
  it('url: the same verdicts, values and messages, alone and before refinements', () => {
    expectSame((c) => z.string().check(c.url('must be an absolute URL')), URLS);
    expectSame(
      (c) =>
        z.string().check(
          c.url('must be an absolute URL'),
          z.refine((u) => /^https?:\/\//i.test(u), 'must be an http: or https: URL'),
          z.refine((u) => !u.includes('#'), 'must have no fragment'),
        ),
      [...URLS, 'https://x.example/#frag', ' https://x.example#f', 'ftp://x.example'],
    );
    expectSame((c) => z.strictObject({ issuer: z.optional(z.string().check(c.url('must be an absolute URL'))) }), URLS.map((issuer) => ({ issuer })));
    expect(outcome(z.string().check(z.url('m')), ' https://exa\tmple.com/ ')).toEqual({ data: 'https://example.com/' });
  });

  it('int: the same verdicts and messages, with bounds after it, with and without a message', () => {
    expectSame((c) => z.number().check(c.int()), INTS);
    expectSame((c) => z.number().check(c.int(), z.gte(1), z.lte(10)), INTS);
    expectSame((c) => z.number().check(c.int('must be a whole number'), z.positive('must be at least 1'), z.lte(86_400, 'must be at most 86400')), INTS);
    expectSame((c) => z.strictObject({ n: z._default(z.number().check(c.int(), z.gte(60)), 3600) }), [...INTS.map((n) => ({ n })), {}]);
    expect(outcome(z.number().check(z.int(), z.gte(1)), 0.5)).toEqual({ issues: [{ code: 'invalid_type', path: [], message: 'Invalid input: expected int, received number' }] });
  });

  it('bounds: the same verdicts and messages at, below and above each, inclusive or not, after int', () => {
    const numbers = [...INTS, -5, 59, 60, 61, 65_535, 65_536, 2 ** 31, 2 ** 31 + 1];
    expectSame((c) => z.number().check(c.gte(60), c.lte(65_535)), numbers);
    expectSame((c) => z.number().check(c.int(), c.gte(0, 'must be 0 or more'), c.lte(1024, 'must be at most 1024')), numbers);
    expectSame((c) => z.number().check(c.positive(), c.lte(2 ** 31)), numbers);
    expectSame((c) => z.number().check(c.positive('must be at least 1')), numbers);
    expectSame((c) => z.number().check(c.nonnegative(), c.int()), numbers);
    expectSame((c) => z.optional(z.number().check(c.int(), c.gte(1))), [...numbers, undefined]);
  });

  it('lengths: code points for strings, items for arrays, and run after an array\'s bad elements as zod\'s do', () => {
    const strings = ['', 'a', 'ab', 'abc', 'abcd', '😀', '😀😀', 'a😀', '😀a😀', '\ud83d', '\ud83d\ud83d', 'x'.repeat(2000), 'x'.repeat(2001), '😀'.repeat(1000), '😀'.repeat(1001), 7, null];
    expectSame((c) => z.string().check(c.minLength(1), c.maxLength(3)), strings);
    expectSame((c) => z.string().check(c.minLength(2, 'must not be empty'), c.maxLength(2000)), strings);
    expectSame((c) => z.string().check(c.minLength(3)), strings);
    expectSame((c) => z.string().check(z.regex(/^[a-z]*$/, 'must be lowercase'), c.maxLength(2)), strings);
    const arrays = [[], ['a'], ['a', 'b', 'c'], [1], [1, 2, 3], ['a', 2, 'c', 4], 'abc', null];
    expectSame((c) => z.array(z.string()).check(c.minLength(1, 'must list at least one'), c.maxLength(2, 'at most 2')), arrays);
    expectSame((c) => z.strictObject({ uris: z.array(z.string().check(c.minLength(1))).check(c.maxLength(2)) }), arrays.map((uris) => ({ uris })));
    let parsed = 0;
    const counted = z.array(z.string().check(z.refine(() => ++parsed > 0))).check(z.minLength(1), z.maxLength(2));
    expect(outcome(counted, Array(100_000).fill('x'))).toMatchObject({ issues: [{ code: 'too_big', path: [] }] });
    expect(parsed).toBe(0);
  });

  it('regex: the same verdicts and messages, with a message, { message, abort }, { error } or none, and a global pattern twice', () => {
    const names = ['alice', 'Alice', 'a..b', '-x', '-..x', 'x'.repeat(70), '', 'bob_1', 7];
    expectSame((c) => z.string().check(c.regex(/^[a-z][a-z0-9_]*$/)), names);
    expectSame((c) => z.string().check(c.regex(/^[a-z][a-z0-9_]*$/, 'must be a lowercase name'), c.maxLength(8)), names);
    expectSame((c) => z.string().check(c.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: 'must be 1-64 letters', abort: true }), z.refine((v) => !v.includes('..'), 'must not contain ".."')), names);
    expectSame((c) => z.string().check(c.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: 'must be 1-64 letters' }), z.refine((v) => !v.includes('..'), 'must not contain ".."')), names);
    expectSame((c) => z.string().check(c.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' })), names);
    expectSame((c) => z.array(z.string().check(c.regex(/a/g, 'must hold an a'))), [['a', 'a', 'ba', 'b', 'aa'], ['b']]);
  });

  it('documents an int as an integer and a url as a string, as zod\'s did', () => {
    for (const build of [(c: typeof OURS) => z.number().check(c.int(), z.gte(1)), (c: typeof OURS) => z.string().check(c.url('m'))]) {
      expect((z.toJSONSchema(build(OURS)) as { type: string }).type).toBe((z.toJSONSchema(build(ZODS)) as { type: string }).type);
    }
    expect((z.toJSONSchema(z.number().check(z.int())) as { type: string }).type).toBe('integer');
  });
});

describe('English messages, beside zod\'s en locale', () => {
  const INPUTS: unknown[] = [undefined, null, 0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 'x', '', true, [], [1], {}, { a: 1 }, new Date(0), 10n, Symbol('s'), () => 1];
  const sizes = (code: 'too_big' | 'too_small', bound: 'maximum' | 'minimum') =>
    ['string', 'array', 'number', 'int', 'unknown', undefined].flatMap((origin) =>
      [true, false].flatMap((inclusive) => [undefined, true].map((exact) => ({ code, origin, inclusive, exact, [bound]: 3, input: 'x' }))),
    );
  // Every issue shape the schemas can raise: their checks' formats are url and regex only (datetime is the MCP SDK's), and their sizes of strings, arrays and numbers.
  const ISSUES = [
    ...['string', 'number', 'int', 'boolean', 'array', 'object', 'record', 'literal', 'never', 'nan', 'bigint', 'symbol', 'function', 'date'].flatMap((expected) =>
      INPUTS.map((input) => ({ code: 'invalid_type', expected, input })),
    ),
    ...[[1], ['a'], [true], [null], ['a', 'b', 3], [10n, 'x']].map((values) => ({ code: 'invalid_value', values, input: 'z' })),
    ...sizes('too_big', 'maximum'),
    ...sizes('too_small', 'minimum'),
    { code: 'invalid_format', format: 'url', input: 'x' },
    { code: 'invalid_format', format: 'datetime', input: 'x' },
    { code: 'invalid_format', format: 'regex', pattern: '/^[a-z]+$/', input: 'X' },
    { code: 'invalid_format', format: 'starts_with', prefix: 'a', input: 'b' },
    { code: 'invalid_format', format: 'ends_with', suffix: 'a', input: 'b' },
    { code: 'invalid_format', format: 'includes', includes: 'a', input: 'b' },
    { code: 'not_multiple_of', divisor: 5, input: 7 },
    { code: 'unrecognized_keys', keys: ['a'], input: {} },
    { code: 'unrecognized_keys', keys: ['a', 'b-c'], input: {} },
    { code: 'invalid_key', origin: 'record', issues: [], input: 'k' },
    { code: 'invalid_union', errors: [], input: 1 },
    { code: 'invalid_union', errors: [], options: ['a', 'b'], input: 1 },
    { code: 'invalid_union', errors: [], options: [], input: 1 },
    { code: 'invalid_union', errors: [], inclusive: false, input: 1 },
    { code: 'invalid_element', origin: 'map', key: 'k', issues: [], input: 1 },
    { code: 'custom', input: 1 },
  ] as unknown as zod.core.$ZodRawIssue[];

  it('words every issue the schemas can raise as the locale does', () => {
    const theirs = en().localeError;
    for (const issue of ISSUES) expect(z.englishIssueMessage(issue), JSON.stringify(issue, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))).toBe(theirs(issue));
  });

  it('is what parses report', () => {
    expect(zod.safeParse(z.strictObject({ a: z.string() }), { a: 1, b: 2 }).error?.issues.map((i) => i.message)).toEqual([
      'Invalid input: expected string, received number',
      'Unrecognized key: "b"',
    ]);
  });
});

describe('lazily', () => {
  it('builds the schema on its first use, once', () => {
    let builds = 0;
    const schema = z.lazily(() => {
      builds++;
      return z.strictObject({ a: z.string() });
    });
    expect(builds).toBe(0);
    expect(schema().safeParse({ a: 'x' }).success).toBe(true);
    expect(schema()).toBe(schema());
    expect(builds).toBe(1);
  });
});
