import { describe, expect, it } from 'vitest';
import { narrow, widen } from './compose.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE } from './effective-profile.ts';
import type { JsonSchema } from './json-schema.ts';
import { filterToolCall, ToolCallAuthorizer } from './tool-call-authorizer.ts';

const readTools: JsonSchema = { properties: { toolName: { enum: ['read_file', 'list_directory'] } }, required: ['toolName'] };
const writeTool: JsonSchema = { properties: { toolName: { const: 'write_file' } }, required: ['toolName'] };
const underSrv: JsonSchema = {
  properties: { input: { properties: { path: { type: 'string', pattern: '^/srv/' } }, required: ['path'] } },
  required: ['input'],
};
const etcPath: JsonSchema = {
  properties: { input: { properties: { path: { type: 'string', pattern: '^/etc/' } }, required: ['path'] } },
  required: ['input'],
};

function profile(allowed: JsonSchema[], restricted: JsonSchema[] = []): EffectiveProfile {
  const allowedToolCalls = allowed.length === 0 ? undefined : { any: allowed.map((schema) => ({ schema })) };
  return { ...NEUTRAL_PROFILE, allowedToolCalls, restrictedToolCalls: restricted };
}

describe('ToolCallAuthorizer.authorize', () => {
  it.each<[string, EffectiveProfile, string, unknown, boolean]>([
    ['no schemas allow everything', NEUTRAL_PROFILE, 'delete_everything', { path: '/' }, true],
    ['an allowed schema admits a listed tool', profile([readTools]), 'read_file', { path: '/srv/a' }, true],
    ['an allowed schema refuses an unlisted tool', profile([readTools]), 'write_file', { path: '/srv/a' }, false],
    ['allowed schemas of one profile are alternatives', profile([readTools, writeTool]), 'write_file', {}, true],
    ['a restricted schema denies a match', profile([], [etcPath]), 'read_file', { path: '/etc/shadow' }, false],
    ['a restricted schema lets others through', profile([], [etcPath]), 'read_file', { path: '/srv/a' }, true],
    ['restricted wins over allowed', profile([readTools], [etcPath]), 'read_file', { path: '/etc/hosts' }, false],
    ['restrictive composition needs both allow rules', narrow(profile([readTools]), profile([underSrv])), 'read_file', { path: '/home/x' }, false],
    ['restrictive composition passes when both pass', narrow(profile([readTools]), profile([underSrv])), 'read_file', { path: '/srv/x' }, true],
    ['permissive composition needs either allow rule', widen(profile([readTools]), profile([writeTool])), 'write_file', {}, true],
    ['permissive composition refuses what neither allows', widen(profile([readTools]), profile([writeTool])), 'move_file', {}, false],
    ['permissive composition keeps restricted schemas of both', widen(profile([readTools]), profile([writeTool], [etcPath])), 'read_file', { path: '/etc/x' }, false],
  ])('%s', (_name, effective, tool, input, allowed) => {
    expect(ToolCallAuthorizer.fromProfile(effective).authorize(tool, input).allowed).toBe(allowed);
  });

  it('says which rule denied a call without quoting its input', () => {
    const authorizer = ToolCallAuthorizer.fromProfile(profile([readTools], [etcPath]));
    expect(authorizer.authorize('write_file', { path: '/srv/secret-value' })).toEqual({
      allowed: false,
      message: 'Tool call "write_file" denied by the trust profile: it matches no allowed tool-call schema',
    });
    expect(authorizer.authorize('read_file', { path: '/etc/secret-value' })).toEqual({
      allowed: false,
      message: 'Tool call "read_file" denied by the trust profile: it matches restricted tool-call schema 1',
    });
  });

  it('understands 2020-12 schemas and tolerates the same $id in two authorizers', () => {
    const schema: JsonSchema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'https://example.com/only-read',
      properties: { toolName: { const: 'read_file' } },
      required: ['toolName'],
    };
    for (let i = 0; i < 2; i++) {
      const authorizer = ToolCallAuthorizer.fromProfile(profile([schema]));
      expect(authorizer.authorize('read_file', {}).allowed).toBe(true);
      expect(authorizer.authorize('write_file', {}).allowed).toBe(false);
    }
  });
});

describe('ToolCallAuthorizer.filter', () => {
  const authorizer = ToolCallAuthorizer.fromProfile(profile([readTools]));
  const call = (name: unknown, args?: unknown) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } });

  it('answers a denied tools/call with a denied-by-policy error for the same id', () => {
    expect(filterToolCall(authorizer, call('write_file', { path: '/srv/a' }))).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32010,
        message: 'Tool call "write_file" denied by the trust profile: it matches no allowed tool-call schema',
        data: { tool: 'write_file', reason: 'denied-by-policy' },
      },
    });
  });

  it.each<[string, unknown]>([
    ['an allowed call', call('read_file', { path: '/srv/a' })],
    ['a call without arguments', call('list_directory')],
    ['another request', { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
    ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }],
    ['a response', { jsonrpc: '2.0', id: 1, result: {} }],
  ])('forwards %s', (_name, message) => {
    expect(authorizer.filter(message)).toBeNull();
  });

  it.each<[string, unknown]>([
    ['a call without a tool name', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} }],
    ['a batch holding a tool call', [call('read_file')]],
  ])('denies %s', (_name, message) => {
    expect(authorizer.filter(message)?.error.data.reason).toBe('denied-by-policy');
  });

  it('denies, never throws, when a schema throws while deciding (one that recurses forever)', () => {
    const loop: JsonSchema = { $id: 'https://example.com/loop', anyOf: [{ $ref: 'https://example.com/loop' }] };
    const looping = ToolCallAuthorizer.fromProfile(profile([], [loop]));
    expect(() => looping.authorize('read_file', {})).toThrow(RangeError);
    expect(looping.filter(call('read_file', { path: '/srv/secret-value' }))).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32010,
        message: 'Tool call "read_file" denied by the trust profile: its rules could not be evaluated for this call',
        data: { tool: 'read_file', reason: 'denied-by-policy' },
      },
    });
  });

  it('refuses a call nested deeper than 128 levels before a recursive rule sees it', () => {
    const nestedArrays: JsonSchema = {
      $defs: { nest: { type: 'array', items: { $ref: '#/$defs/nest' } } },
      properties: { input: { properties: { a: { $ref: '#/$defs/nest' } }, required: ['a'] } },
      required: ['input'],
    };
    const recursive = ToolCallAuthorizer.fromProfile(profile([], [nestedArrays]));
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    expect(() => recursive.authorize('read_file', { a: deep })).toThrow(RangeError);
    expect(recursive.filter(call('read_file', { a: deep }))?.error).toMatchObject({ code: -32600, message: 'Request nested deeper than 128 levels', data: { reason: 'invalid-request' } });
    // Within the limit the same rule decides as written.
    expect(recursive.filter(call('read_file', { a: JSON.parse('['.repeat(120) + ']'.repeat(120)) }))?.error.data.reason).toBe('denied-by-policy');
    expect(recursive.filter(call('read_file', { a: 'text' }))).toBeNull();
  });

  it('forwards everything when the profile has no tool-call schema', () => {
    const open = ToolCallAuthorizer.fromProfile(NEUTRAL_PROFILE);
    expect(open.unrestricted).toBe(true);
    expect(open.filter(call('anything'))).toBeNull();
  });
});
