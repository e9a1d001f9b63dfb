/**
 * `OAuthState`, the Durable Object holding the OAuth state on Workers, run in process with a map
 * for its storage: records nobody reads again (a sign-in never answered, a used code, an idle
 * client's mark) are deleted by a later write's sweep, not kept for ever
 * (test/cloudflare/oauth.test.ts runs the real object under workerd).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DurableObjectOAuthStore, OAuthState, SWEEP_EVERY_MS } from './oauth-state-object.ts';
import type { DurableObjectNamespace, DurableObjectState } from './workers-runtime.ts';

function objectWithMap() {
  const stored = new Map<string, unknown>();
  const state = {
    storage: {
      get: async (k: string) => stored.get(k),
      put: async (k: string, v: unknown) => void stored.set(k, structuredClone(v)),
      delete: async (k: string) => stored.delete(k),
      list: async ({ prefix = '' } = {}) => new Map([...stored].filter(([k]) => k.startsWith(prefix))),
    },
  } as unknown as DurableObjectState;
  const object = new OAuthState(state);
  const op = async (body: unknown) => (await object.fetch(new Request('https://oauth-state.switchyard/', { method: 'POST', body: JSON.stringify(body) }))).json();
  return { stored, op };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('OAuthState', () => {
  it('deletes expired records nobody reads again on a later write, at most once an hour, and keeps live ones', async () => {
    const { stored, op } = objectWithMap();
    const now = Date.now();
    await op({ op: 'put', kind: 'consent', id: 'never-answered', value: { g: 'alice' }, expiresAt: now + 60_000 });
    await op({ op: 'put', kind: 'client', id: 'idle', value: { active: true }, expiresAt: now + 120_000 });
    await op({ op: 'add', kind: 'key', id: 'hmac-sha256', value: { secret: 'k' }, expiresAt: null });
    await op({ op: 'put', kind: 'grant', id: 'live', value: {}, expiresAt: now + 10 * SWEEP_EVERY_MS });
    vi.setSystemTime(now + SWEEP_EVERY_MS / 2);
    await op({ op: 'put', kind: 'code', id: 'c1', value: {}, expiresAt: now + SWEEP_EVERY_MS / 2 + 60_000 });
    // Expired, but not swept yet: the last sweep was less than an hour ago.
    expect(stored.has('consent:never-answered')).toBe(true);
    vi.setSystemTime(now + SWEEP_EVERY_MS + 1);
    await op({ op: 'put', kind: 'access', id: 'a1', value: {}, expiresAt: now + 2 * SWEEP_EVERY_MS });
    expect([...stored.keys()].filter((k) => k !== 'sweep:next').sort()).toEqual(['access:a1', 'grant:live', 'key:hmac-sha256']);
  });

  it('answers an expired record as absent, as before', async () => {
    const { op } = objectWithMap();
    await op({ op: 'put', kind: 'code', id: 'c', value: { x: 1 }, expiresAt: Date.now() + 1_000 });
    expect(await op({ op: 'get', kind: 'code', id: 'c' })).toEqual({ value: { x: 1 } });
    vi.setSystemTime(Date.now() + 1_000);
    expect(await op({ op: 'take', kind: 'code', id: 'c' })).toEqual({});
  });

  it('says an object running an older worker refused an operation it does not know, rather than only its status', async () => {
    const older = { idFromName: () => ({}), get: () => ({ fetch: async () => Response.json({ error: 'Invalid store operation' }, { status: 400 }) }) } as unknown as DurableObjectNamespace;
    await expect(new DurableObjectOAuthStore(older).add('key', 'hmac-sha256', {}, null)).rejects.toThrow(
      'The OAuth state object refused a add of a "key" record: HTTP 400: the OAuthState Durable Object runs another version of the worker than this isolate (a deploy still under way?); it passes once both run the same one',
    );
  });
});
