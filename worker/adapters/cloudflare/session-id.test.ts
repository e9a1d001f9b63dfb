import { describe, expect, it } from 'vitest';
import { parseMcpConnectionRequestOrWireError } from '../../../shared/connection-request.ts';
import { objectOfSession, sessionIdIn } from './session-id.ts';
import type { DurableObjectId, DurableObjectNamespace } from './workers-runtime.ts';

/** A namespace whose ids are 64 hex digits, refusing any other string as workerd does. */
function namespace(): DurableObjectNamespace {
  const id = (hex: string): DurableObjectId => ({ toString: () => hex, equals: (other) => other.toString() === hex });
  return {
    idFromName: () => id('a'.repeat(64)),
    idFromString(text) {
      if (!/^[0-9a-f]{64}$/.test(text)) throw new TypeError('Invalid Durable Object ID');
      return id(text);
    },
    newUniqueId: () => id(crypto.randomUUID().replace(/-/g, '').repeat(2)),
    get: () => ({ fetch: async () => new Response(null) }),
  };
}

describe('session ids that name their Durable Object', () => {
  it('reads back the object a minted id names, and each id is new', () => {
    const ns = namespace();
    const object = ns.newUniqueId();
    const first = sessionIdIn(object);
    expect(objectOfSession(ns, first)?.toString()).toBe(object.toString());
    expect(sessionIdIn(object)).not.toBe(first);
  });

  it('is a session id the connection request accepts', () => {
    const session = sessionIdIn(namespace().newUniqueId());
    expect(() => parseMcpConnectionRequestOrWireError({ type: 'mcp', connection: { 'server-name': 'files', session } })).not.toThrow();
  });

  it('names no object for an id of another shape, or one the namespace refuses', () => {
    const ns = namespace();
    for (const id of ['', crypto.randomUUID(), `${'a'.repeat(63)}_${crypto.randomUUID()}`, `${'A'.repeat(64)}_${crypto.randomUUID()}`, `${'a'.repeat(64)}.${crypto.randomUUID()}`]) {
      expect(objectOfSession(ns, id)).toBeNull();
    }
    const refusing = { ...ns, idFromString: () => { throw new TypeError('not this namespace'); } };
    expect(objectOfSession(refusing, sessionIdIn(ns.newUniqueId()))).toBeNull();
  });
});
