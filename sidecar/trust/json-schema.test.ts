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

  it('refuses a format it does not check, wherever it is, naming where', () => {
    expect(schemaProblem({ properties: { input: { properties: { host: { format: 'hostnam' } } } } })).toMatch(
      /^schema\/properties\/input\/properties\/host\/format "hostnam" is not a format this host checks, so the rule would not hold: use one of .*\bhostname\b/,
    );
    expect(schemaProblem({ anyOf: [{ type: 'number' }, { format: 'semver' }] })).toMatch(/^schema\/anyOf\/1\/format "semver" is not a format this host checks/);
    expect(schemaProblem({ properties: { format: { const: 'semver' } } })).toBeUndefined(); // a property named format is no keyword
  });

  it('refuses a 2020-12 keyword in a schema that does not declare that dialect, and takes it where it does', () => {
    const closed = { properties: { input: { unevaluatedProperties: false, properties: { path: { type: 'string' } } } } };
    expect(schemaProblem(closed)).toBe(
      'schema/properties/input/unevaluatedProperties is a keyword of JSON Schema 2020-12, which this schema does not declare, so the rule would not hold: add "$schema": "https://json-schema.org/draft/2020-12/schema"',
    );
    expect(schemaProblem({ $schema: DRAFT_2020, ...closed })).toBeUndefined();
    const holds = new SchemaCompiler().compile({ $schema: DRAFT_2020, ...closed });
    expect([holds({ input: { path: '/srv' } }), holds({ input: { path: '/srv', extra: 1 } })]).toEqual([true, false]);
  });

  it('still takes unknown annotation keywords and plain draft-07 schemas', () => {
    expect(schemaProblem({ 'x-order': 1, title: 'Reads', properties: { toolName: { const: 'read_file' } }, dependencies: { a: ['b'] } })).toBeUndefined();
  });
});
