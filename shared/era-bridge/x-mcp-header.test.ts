import { describe, expect, it } from 'vitest';
import { annotatedArguments, paramHeaderMismatch } from './x-mcp-header.ts';

const SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    count: { type: 'integer', 'x-mcp-header': 'Count' },
    dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
    nested: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
    query: { type: 'string' },
  },
};

describe('x-mcp-header', () => {
  it('finds annotations reached through properties alone, names lower-cased', () => {
    expect(annotatedArguments(SCHEMA)).toEqual([
      { header: 'region', path: ['region'], type: 'string' },
      { header: 'count', path: ['count'], type: 'integer' },
      { header: 'dry-run', path: ['dry'], type: 'boolean' },
      { header: 'zone', path: ['nested', 'zone'], type: 'string' },
    ]);
    expect(annotatedArguments({ type: 'object', properties: { q: { type: 'string' } } })).toEqual([]);
  });

  it('refuses annotations the spec forbids: under items or anyOf, on a number, duplicated, not a token', () => {
    expect(annotatedArguments({ type: 'object', properties: { list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } } } })).toBeNull();
    expect(annotatedArguments({ anyOf: [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'A' } } }] })).toBeNull();
    expect(annotatedArguments({ properties: { n: { type: 'number', 'x-mcp-header': 'N' } } })).toBeNull();
    expect(annotatedArguments({ properties: { a: { type: 'string', 'x-mcp-header': 'X' }, b: { type: 'string', 'x-mcp-header': 'x' } } })).toBeNull();
    expect(annotatedArguments({ properties: { a: { type: 'string', 'x-mcp-header': 'has space' } } })).toBeNull();
  });

  it('accepts headers that match the arguments: integers numerically, booleans as words, absent values without headers', () => {
    const annotated = annotatedArguments(SCHEMA)!;
    expect(paramHeaderMismatch(annotated, { region: 'us-west1', count: 42, dry: false, query: 'x' }, { region: 'us-west1', count: '42.0', 'dry-run': 'false', other: 'ignored' })).toBeUndefined();
    expect(paramHeaderMismatch(annotated, { region: 'eu', count: null }, { region: 'eu' })).toBeUndefined();
  });

  it('names the first mismatch: a missing header, another value, a header without its argument', () => {
    const annotated = annotatedArguments(SCHEMA)!;
    expect(paramHeaderMismatch(annotated, { region: 'us' }, {})).toContain('Mcp-Param-region header is missing');
    expect(paramHeaderMismatch(annotated, { region: 'us' }, { region: 'eu' })).toContain("value 'eu' does not match body value 'us'");
    expect(paramHeaderMismatch(annotated, { region: 'us', count: 4 }, { region: 'us', count: 'four' })).toContain('Mcp-Param-count');
    // Numerically, but in decimal only: what Number() alone also reads is not the body's value.
    for (const sent of ['0x2A', '0b101010', '0o52', ' ', 'Infinity']) expect(paramHeaderMismatch(annotated, { region: 'us', count: 42 }, { region: 'us', count: sent })).toContain('Mcp-Param-count');
    for (const sent of ['42', '+42', '42.0', '4.2e1', '-0']) expect(paramHeaderMismatch(annotated, { region: 'us', count: sent === '-0' ? 0 : 42 }, { region: 'us', count: sent })).toBeUndefined();
    expect(paramHeaderMismatch(annotated, { region: 'us', nested: {} }, { region: 'us', zone: 'a' })).toContain('arguments.nested.zone is not');
  });
});
