/**
 * shared/zod.ts's `url` and `int` against zod's own checks of those names, which they replace in
 * every schema (issue 17): over a corpus of inputs, in the positions the schemas use them (alone,
 * before refinements and bounds, with and without a message, inside objects), both give the same
 * result, the same value and the same issues with the same messages, and the config reference
 * documents the same types.
 */
import { describe, expect, it } from 'vitest';
import * as zod from 'zod/mini';
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

type Build = (c: { url: typeof z.url; int: typeof z.int }) => zod.ZodMiniType;
const OURS = { url: z.url, int: z.int };
const ZODS = { url: (message: string) => zod.url(message), int: (message?: string) => zod.int(message) } as unknown as typeof OURS;

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

  it('documents an int as an integer and a url as a string, as zod\'s did', () => {
    for (const build of [(c: typeof OURS) => z.number().check(c.int(), z.gte(1)), (c: typeof OURS) => z.string().check(c.url('m'))]) {
      expect((z.toJSONSchema(build(OURS)) as { type: string }).type).toBe((z.toJSONSchema(build(ZODS)) as { type: string }).type);
    }
    expect((z.toJSONSchema(z.number().check(z.int())) as { type: string }).type).toBe('integer');
  });
});
