import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SchemaCompiler, schemaProblem } from './json-schema.ts';

/** Patterns whose classes RE2 reads otherwise than ECMAScript, and some it reads the same. */
const PATTERNS = [
  '^.$', '^.+$', 'a.c', '^\\S+$', '^\\s*$', '[\\s\\S]', '^[^\\s]+$', '^[\\S]+$', '^[^\\S\\n]+$', '^[^]$', '^[a-z.]+$', '\\.', '^.{2}$',
  '^\\d+$', '^\\w+$', '\\bx\\b', '^(?<word>\\w+)-\\d$', '^\\u{1F600}$', '^[\\u0000-\\u001f]$', 'x|^$', '[^a-z]', '^\\p{L}+$', '^[\\p{L}\\s]+$',
];

const CHARACTERS = ['a', 'b', 'c', 'x', 'z', '1', '_', '-', '.', ' ', '\t', '\n', '\r', '\v', '\u0000', '\u00a0', '\u1680', '\u2003', '\u200b', '\u2028', '\u2029', '\ufeff', 'é', 'Ω', '😀'];

describe('tool-call patterns, matched in linear time', () => {
  it('match what ECMAScript matches, line terminators and Unicode spaces included', () => {
    const compiled = PATTERNS.map((pattern) => ({ pattern, linear: new SchemaCompiler().compile({ type: 'string', pattern }), native: new RegExp(pattern, 'u') }));
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...CHARACTERS), { maxLength: 6 }), (chars) => {
        const input = chars.join('');
        for (const { linear, native } of compiled) expect(linear(input), JSON.stringify(input)).toBe(native.test(input));
      }),
      { numRuns: 2000 },
    );
  });

  it('decide a pattern that backtracks without end in ECMAScript, on a long input', () => {
    const validate = new SchemaCompiler().compile({ type: 'object', properties: { cmd: { type: 'string', pattern: '^([a-z0-9_-]+/?)*$' } } });
    expect(validate({ cmd: `${'a'.repeat(50_000)}!` })).toBe(false);
    expect(validate({ cmd: 'src/lib/' })).toBe(true);
  });

  it('keep each pattern of a schema its own', () => {
    const validate = new SchemaCompiler().compile({ type: 'object', properties: { a: { type: 'string', pattern: '^a$' }, b: { type: 'string', pattern: '^b$' } }, patternProperties: { '^x-': { type: 'number' } } });
    expect([validate({ a: 'a', b: 'b', 'x-n': 1 }), validate({ a: 'b', b: 'a' }), validate({ a: 'a', b: 'b', 'x-n': 'one' })]).toEqual([true, false, false]);
  });

  it('refuse a lookaround or back-reference when the profile is read, saying why', () => {
    expect(schemaProblem({ type: 'string', pattern: '^(?!admin)' })).toMatch(/^pattern "\^\(\?!admin\)" cannot be matched in linear time: .*: write it without lookarounds or back-references$/);
    for (const pattern of ['(a)\\1', '(?<q>a)\\k<q>']) expect(schemaProblem({ type: 'string', pattern })).toBe(`pattern "${pattern}" cannot be matched in linear time: it holds a back-reference: write it without lookarounds or back-references`);
    expect(schemaProblem({ type: 'string', pattern: '(?i)abc' })).toMatch(/Invalid regular expression/);
  });
});
