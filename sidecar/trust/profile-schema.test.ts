import { describe, expect, it } from 'vitest';
import { parseWith, ValidationError } from '../../shared/validation.ts';
import { trustProfileFileSchema, trustProfileRefSchema } from './profile-schema.ts';

function problems(input: unknown): string[] {
  try {
    parseWith(trustProfileFileSchema, input, 'trust profile "t"');
  } catch (error) {
    if (error instanceof ValidationError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  return [];
}

describe('trust profile file schema', () => {
  it('parses the DESIGN §4 example and expands a bare base name to restrictive', () => {
    const file = parseWith(trustProfileFileSchema, {
      'base-trust-profiles': ['base', { profile: 'wide', 'inheritance-mode': 'permissive' }],
      'filesystem-paths': [{ 'source-path': '/home/alice/project/', 'access-mode': 'read-write' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH', 'LANG'], set: { NODE_ENV: 'production' } },
    }, 'trust profile');
    expect(file['base-trust-profiles']).toEqual([
      { profile: 'base', 'inheritance-mode': 'restrictive' },
      { profile: 'wide', 'inheritance-mode': 'permissive' },
    ]);
    expect(file['filesystem-paths']?.[0]?.['source-path']).toBe('/home/alice/project');
  });

  it('normalises paths so one directory has one spelling', () => {
    const file = parseWith(trustProfileFileSchema, { 'filesystem-paths': [{ 'source-path': '/a/./b/../c//', 'target-path': '/x/', 'access-mode': 'read-only' }] }, 't');
    expect(file['filesystem-paths']?.[0]).toEqual({ 'source-path': '/a/c', 'target-path': '/x', 'access-mode': 'read-only' });
  });

  it.each<[string, unknown, string[]]>([
    ['an unknown top-level key', { 'network-capability': [] }, ['network-capability: unknown key']],
    ['an unknown nested key', { 'filesystem-paths': [{ 'source-path': '/a', 'access-mode': 'read-only', mode: 1 }] }, ['filesystem-paths[0].mode: unknown key']],
    ['a relative path', { 'filesystem-paths': [{ 'source-path': 'project', 'access-mode': 'read-only' }] }, ['filesystem-paths[0].source-path: must be an absolute path']],
    ['a relative target', { 'filesystem-paths': [{ 'source-path': '/a', 'target-path': 'b', 'access-mode': 'read-only' }] }, ['filesystem-paths[0].target-path: must be an absolute path']],
    ['a missing access mode', { 'filesystem-paths': [{ 'source-path': '/a' }] }, ['filesystem-paths[0].access-mode: is required: "read-only" or "read-write"']],
    ['an unknown access mode', { 'filesystem-paths': [{ 'source-path': '/a', 'access-mode': 'rw' }] }, ['filesystem-paths[0].access-mode: must be "read-only" or "read-write"']],
    ['an unknown network capability', { 'network-capabilities': ['lan'] }, ['network-capabilities[0]: must be "loopback" or "internet-client"']],
    ['a base name with a path', { 'base-trust-profiles': ['../etc/passwd'] }, ['base-trust-profiles[0].profile: must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit']],
    ['a base that is neither name nor object', { 'base-trust-profiles': [3] }, ['base-trust-profiles[0]: must be a profile name or {"profile", "inheritance-mode"}']],
    ['an unknown inheritance mode', { 'base-trust-profiles': [{ profile: 'b', 'inheritance-mode': 'union' }] }, ['base-trust-profiles[0].inheritance-mode: must be "restrictive" or "permissive"']],
    ['a bad environment name', { environment: { inherit: ['A-B'] } }, ['environment.inherit[0]: must be an environment variable name']],
    ['a non-string environment value', { environment: { set: { A: 1 } } }, ['environment.set.A: must be a string (got a number)']],
    ['a schema that is not a schema', { 'allowed-mcp-tool-call-schemas': ['x'] }, ['allowed-mcp-tool-call-schemas[0]: must be a JSON Schema (an object or a boolean)']],
  ])('reports %s as path: message', (_name, input, expected) => {
    expect(problems(input)).toEqual(expected);
  });

  it('reports an invalid JSON Schema with its meta-schema problem', () => {
    const [problem] = problems({ 'restricted-mcp-tool-call-schemas': [{ type: 12 }] });
    expect(problem).toMatch(/^restricted-mcp-tool-call-schemas\[0\]: invalid JSON Schema: schema\/type must be/);
  });

  it('reports every problem at once', () => {
    expect(problems({ bogus: 1, 'network-capabilities': ['x'] })).toHaveLength(2);
  });

  it.each([
    ['workspace', true],
    ['a.b_c-1', true],
    ['A'.repeat(64), true],
    ['A'.repeat(65), false],
    ['.hidden', false],
    ['..', false],
    ['a..b', false],
    ['a.b..', false],
    ['a/b', false],
    ['', false],
    ['-x', false],
  ])('reference %j valid: %s', (ref, valid) => {
    expect(trustProfileRefSchema.safeParse(ref).success).toBe(valid);
  });
});
