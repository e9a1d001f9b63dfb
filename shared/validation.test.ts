import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { parseWith, safeParseWith, ValidationError } from './validation.ts';

function issuesOf(schema: z.core.$ZodType, input: unknown): string[] {
  try {
    parseWith(schema, input, 'thing');
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  return expect.unreachable();
}

describe('parseWith', () => {
  // zod/mini registers no locale: without shared/zod.ts every message reads "Invalid input".
  // This file imports no zod classic (nor the MCP SDK, which would register English on its own).
  it('reports zod/mini issues in English as path: message', () => {
    const schema = z.strictObject({ port: z.number().check(z.int(), z.lte(65_535)), name: z.string() });
    try {
      parseWith(schema, { port: 70_000, name: 1, extra: true }, 'thing');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues).toEqual([
        { path: 'port', message: 'must be at most 65535' },
        { path: 'name', message: 'must be a string (got a number)' },
        { path: 'extra', message: 'unknown key' },
      ]);
    }
  });

  it('words bounds and sets as the house does, never quoting the value back', () => {
    const schema = z.strictObject({
      idle: z.number().check(z.positive()),
      count: z.number().check(z.gte(1), z.lt(10)),
      name: z.string().check(z.minLength(3)),
      tags: z.array(z.string()).check(z.maxLength(1)),
      containment: z.enum(['required', 'none']),
      mode: z.optional(z.enum(['a', 'b', 'c'])),
    });
    const problems = (input: unknown) => {
      const result = safeParseWith(schema, input);
      return result.success ? [] : result.issues.map((i) => `${i.path}: ${i.message}`);
    };
    expect(problems({ idle: 0, count: 10, name: 'ab', tags: ['x', 'y'], containment: 'sy_secret_token', mode: 'd' })).toEqual([
      'idle: must be more than 0',
      'count: must be less than 10',
      'name: must be at least 3 characters long',
      'tags: must have at most 1 item',
      'containment: must be "required" or "none"',
      'mode: must be one of "a", "b" or "c"',
    ]);
    expect(problems({ idle: 1, count: 0, name: 'abc', tags: [] })).toEqual(['count: must be at least 1', 'containment: is required: "required" or "none"']);
  });

  const agent = z.strictObject({ name: z.string(), 'max-sessions': z.optional(z.number()) });
  const schema = z.strictObject({
    agents: z.array(agent),
    'allowed-hosts': z._default(z.array(z.string()), []),
    'session-idle-seconds': z._default(z.number(), 900),
    limits: z.optional(z.strictObject({ 'memory-limit-mib': z.optional(z.number()) })),
    executor: z.optional(z.strictObject({ type: z.literal('reverse-http'), 'entity-id': z.string() })),
  });

  it('suggests the key a typo meant, from the keys the schema takes at that path', () => {
    expect(issuesOf(schema, { agents: [{ name: 'a', 'max-sesions': 2 }], 'allowed-host': [], limits: { 'memory-limit-mb': 1 }, colour: 'blue' })).toEqual([
      'agents[0].max-sesions: unknown key (did you mean "max-sessions"?)',
      'limits.memory-limit-mb: unknown key (did you mean "memory-limit-mib"?)',
      'allowed-host: unknown key (did you mean "allowed-hosts"?)',
      'colour: unknown key',
    ]);
  });

  it('does not suggest a key the input has already', () => {
    expect(issuesOf(schema, { agents: [{ name: 'a', 'max-sessions': 1, 'max-sesions': 2 }] })).toEqual(['agents[0].max-sesions: unknown key']);
  });

  it('says a missing key is required, and reports a typo of it once, on the typo', () => {
    expect(issuesOf(schema, { agents: [{}] })).toEqual(['agents[0].name: is required']);
    expect(issuesOf(schema, { agents: [], executor: { type: 'reverse-http', entity_id: 'laptop' } })).toEqual(['executor.entity_id: unknown key (did you mean "entity-id"?)']);
    expect(issuesOf(schema, { agents: [{ nmae: 'a' }] })).toEqual(['agents[0].nmae: unknown key (did you mean "name"?)']);
  });

  it('words a value of the wrong type as what it must be and what it is', () => {
    expect(issuesOf(schema, { agents: [{ name: 1 }], 'session-idle-seconds': '900', 'allowed-hosts': 'x' })).toEqual([
      'agents[0].name: must be a string (got a number)',
      'allowed-hosts: must be an array (got a string)',
      'session-idle-seconds: must be a number (got a string)',
    ]);
    expect(issuesOf(schema, { agents: {} })).toEqual(['agents: must be an array (got an object)']);
    expect(issuesOf(schema, null)).toEqual(['(root): must be an object (got null)']);
  });

  it('keeps a schema\'s own message for a wrong type', () => {
    expect(issuesOf(z.strictObject({ n: z.number().check(z.int('must be a whole number of MiB')) }), { n: 1.5 })).toEqual(['n: must be a whole number of MiB']);
  });

  it('gives a value that is no URL at all that one problem, not also what kind of URL it must be', () => {
    const url = z.strictObject({
      url: z.string().check(z.url('must be an absolute URL'), z.refine((u) => /^https?:\/\//i.test(u), 'must be an http: or https: URL')),
    });
    expect(issuesOf(url, { url: 'not a url' })).toEqual(['url: must be an absolute URL']);
    expect(issuesOf(url, { url: 'ftp://x' })).toEqual(['url: must be an http: or https: URL']);
  });
});
