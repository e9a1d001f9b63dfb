import { describe, expect, it } from 'vitest';
import { SchemaCompiler, schemaProblem } from './json-schema.ts';

const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

describe('tool-call schemas hold as they read (review s20)', () => {
  it('checks formats: a uri rule passes a uri and refuses what is none', () => {
    const isUri = new SchemaCompiler().compile({ properties: { url: { type: 'string', format: 'uri' } } });
    expect([isUri({ url: 'https://example.com/a' }), isUri({ url: 'not a uri at all; rm -rf /' })]).toEqual([true, false]);
    const isDate = new SchemaCompiler().compile({ $schema: DRAFT_2020, properties: { day: { format: 'date' } } });
    expect([isDate({ day: '2026-12-06' }), isDate({ day: 'tomorrow' })]).toEqual([true, false]);
  });

  it('refuses a format it does not check, wherever it is, a $ref\'s target included, naming where', () => {
    expect(schemaProblem({ properties: { input: { properties: { host: { format: 'hostnam' } } } } })).toMatch(
      /^unknown format "hostnam" ignored in schema at path "#\/properties\/input\/properties\/host", so the rule would not hold: use one of .*\bhostname\b.*, or a pattern$/,
    );
    expect(schemaProblem({ anyOf: [{ type: 'number' }, { format: 'semver' }] })).toMatch(/^unknown format "semver" ignored in schema at path "#\/anyOf\/1"/);
    expect(schemaProblem({ properties: { x: { $ref: '#/x-lib/s' } }, 'x-lib': { s: { format: 'no-such' } } })).toMatch(/^unknown format "no-such" ignored in schema at path "#\/x-lib\/s"/);
    // ajv-formats takes these for annotations: any string passes.
    expect(schemaProblem({ format: 'password' })).toMatch(/^unknown format "password"/);
    expect(schemaProblem({ properties: { format: { const: 'semver' } } })).toBeUndefined(); // a property named format is no keyword
  });

  it('refuses a keyword of the dialect a schema does not declare, a $ref\'s target included, and takes it where it is that dialect\'s', () => {
    const closed = { properties: { input: { unevaluatedProperties: false, properties: { path: { type: 'string' } } } } };
    expect(schemaProblem(closed)).toBe(
      '"unevaluatedProperties" would be ignored, so the rule would not hold: it is a keyword of JSON Schema 2020-12, which this schema does not declare: add "$schema": "https://json-schema.org/draft/2020-12/schema"',
    );
    expect(schemaProblem({ properties: { x: { $ref: '#/x-lib/s' } }, 'x-lib': { s: { unevaluatedProperties: false } } })).toMatch(/^"unevaluatedProperties" would be ignored/);
    expect(schemaProblem({ $schema: DRAFT_2020, prefixItems: [{}], additionalItems: false })).toMatch(/^"additionalItems" would be ignored, so the rule would not hold: it is not a keyword of JSON Schema 2020-12/);
    expect(schemaProblem({ $schema: DRAFT_2020, ...closed })).toBeUndefined();
    const holds = new SchemaCompiler().compile({ $schema: DRAFT_2020, ...closed });
    expect([holds({ input: { path: '/srv' } }), holds({ input: { path: '/srv', extra: 1 } })]).toEqual([true, false]);
  });

  it('refuses a $ref that resolves nowhere when the profile is checked, not first at a launch', () => {
    expect(schemaProblem({ $ref: '#/nowhere' })).toBe("can't resolve reference #/nowhere from id #");
  });

  it('still takes unknown annotation keywords and plain draft-07 schemas', () => {
    expect(schemaProblem({ 'x-order': 1, title: 'Reads', properties: { toolName: { const: 'read_file' } }, dependencies: { a: ['b'] } })).toBeUndefined();
  });
});
