import { describe, expect, it } from 'vitest';
import { MAX_DESCRIPTOR_DEPTH, parseConnectionDescriptor, serializeConnectionDescriptor } from './descriptors.ts';
import { ValidationError } from './validation.ts';

function issues(input: unknown, path = ''): string[] {
  try {
    parseConnectionDescriptor(input, path);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected rejection');
}

describe('connection descriptors', () => {
  it('parses nested host-outer/target-inner and serializes back identically', () => {
    const texts = [
      '{"type":"local"}',
      '{"type":"http","url":"https://docs.example.com/mcp","headers":{"X-Team":"a"}}',
      '{"type":"reverse-http","entity-id":"alice-laptop"}',
      '{"type":"user-computer-profile","entity-id":"alice-laptop","target":{"type":"local"}}',
      '{"type":"user-computer-profile","entity-id":"build.box-2","target":{"type":"http","url":"http://127.0.0.1:3001/mcp"}}',
      '{"type":"reverse-http","entity-id":"a","target":{"type":"user-computer-profile","entity-id":"b","target":{"type":"local"}}}',
    ];
    for (const text of texts) {
      expect(serializeConnectionDescriptor(parseConnectionDescriptor(JSON.parse(text)))).toBe(text);
    }
  });

  it('names an unknown type and where it is', () => {
    expect(issues({ type: 'ssh', host: 'x' }, 'servers.files.executor')).toEqual([
      'servers.files.executor.type: unknown descriptor type "ssh": expected one of local, http, user-computer-profile, reverse-http',
    ]);
    expect(issues({ type: 'user-computer-profile', 'entity-id': 'h', target: { type: 'carrier-pigeon' } })[0]).toMatch(
      /^target\.type: unknown descriptor type "carrier-pigeon"/,
    );
    expect(issues({}, 'servers.files.executor')).toEqual(['servers.files.executor.type: is required: one of local, http, user-computer-profile, reverse-http']);
  });

  it('refuses an http URL that carries credentials, pointing at headers', () => {
    expect(issues({ type: 'http', url: 'https://svc:ghp_secret@docs.example.com/mcp' }, 'servers.docs.executor')).toEqual([
      'servers.docs.executor.url: must not carry a user name or password: send credentials in "headers" (e.g. {"Authorization": "Basic …"})',
    ]);
  });

  it('rejects hostile nesting depth before walking it', () => {
    let deep: unknown = { type: 'local' };
    for (let i = 0; i < 10_000; i++) deep = { type: 'reverse-http', 'entity-id': 'h', target: deep };
    const problems = issues(deep);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toBe(`target.target.target.target: nesting is deeper than ${MAX_DESCRIPTOR_DEPTH} levels`);
  });

  it('rejects unknown keys, bad urls and traversal in entity ids', () => {
    expect(issues({ type: 'local', command: 'sh' })).toEqual(['command: unknown key']);
    expect(issues({ type: 'http', url: 'file:///etc/passwd' })[0]).toMatch(/^url: /);
    expect(issues({ type: 'reverse-http', 'entity-id': '../etc' })[0]).toMatch(/^entity-id: /);
  });
});
