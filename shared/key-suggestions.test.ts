import { describe, expect, it } from 'vitest';
import * as z from './zod.ts';
import { closestKey, knownKeysAt } from './key-suggestions.ts';

describe('closestKey', () => {
  const keys = ['name', 'token-sha256', 'servers', 'trust-context', 'max-sessions'];

  it('names a key one or two edits away', () => {
    expect(closestKey('max-sesions', keys)).toBe('max-sessions');
    expect(closestKey('sevrers', keys)).toBe('servers');
    expect(closestKey('nmae', keys)).toBe('name');
    expect(closestKey('comand', ['command', 'args', 'env', 'cwd'])).toBe('command');
  });

  it('names a key written with "_" for "-" or in another case, however far that is', () => {
    expect(closestKey('trust_context', keys)).toBe('trust-context');
    expect(closestKey('Token_SHA256', keys)).toBe('token-sha256');
  });

  it('names nothing further than two edits, nor a short key that shares nothing with it', () => {
    expect(closestKey('colour', keys)).toBeUndefined();
    expect(closestKey('max', keys)).toBeUndefined();
    expect(closestKey('ab', ['cd'])).toBeUndefined();
    expect(closestKey('anything', [])).toBeUndefined();
  });

  it('takes the nearest, and the first of equals in the schema\'s order', () => {
    expect(closestKey('servers-x', ['server', 'servers'])).toBe('servers');
    expect(closestKey('ab', ['abc', 'abd'])).toBe('abc');
  });
});

describe('knownKeysAt', () => {
  const schema = z.strictObject({
    agents: z.array(z.strictObject({ name: z.string(), 'max-sessions': z.optional(z.number()) })),
    servers: z.record(z.string(), z.strictObject({ executor: z.unknown() })),
    limits: z.optional(z.strictObject({ 'memory-limit-mib': z._default(z.number(), 1) })).check(z.describe('limits')),
    either: z.union([z.strictObject({ a: z.string() }), z.strictObject({ b: z.string() })]),
  });

  it('walks objects, arrays, records, optional, default and checked schemas to the object at a path', () => {
    expect(knownKeysAt(schema, [])).toEqual(['agents', 'servers', 'limits', 'either']);
    expect(knownKeysAt(schema, ['agents', 0])).toEqual(['name', 'max-sessions']);
    expect(knownKeysAt(schema, ['servers', 'files'])).toEqual(['executor']);
    expect(knownKeysAt(schema, ['limits'])).toEqual(['memory-limit-mib']);
  });

  it('gives every option\'s keys of a union, and none where the path leads to no object', () => {
    expect(knownKeysAt(schema, ['either'])).toEqual(['a', 'b']);
    expect(knownKeysAt(schema, ['agents', 0, 'name'])).toEqual([]);
    expect(knownKeysAt(schema, ['nowhere', 'deeper'])).toEqual([]);
  });
});
