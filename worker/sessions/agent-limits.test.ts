import { describe, expect, it } from 'vitest';
import { admitSession, limitReached, sessionLimitOf } from './agent-limits.ts';

const s = (id: string, lastSeen: number, inFlight = 0) => ({ id, lastSeen, inFlight });

describe('agent session limits', () => {
  it('admits without ending anything below the limit', () => {
    expect(admitSession([s('a', 1)], 0, 2)).toEqual({ kind: 'admit', evict: [] });
  });

  it('ends the least recently used idle session at the limit, never a busy one', () => {
    expect(admitSession([s('busy-oldest', 1, 1), s('idle-old', 2), s('idle-new', 3)], 0, 3)).toEqual({ kind: 'admit', evict: ['idle-old'] });
  });

  it('counts sessions being opened and ends as many as a lowered limit needs', () => {
    expect(admitSession([s('a', 3), s('b', 1), s('c', 2)], 1, 2)).toEqual({ kind: 'admit', evict: ['b', 'c', 'a'] });
  });

  it('is full when not enough sessions are idle', () => {
    expect(admitSession([s('a', 1, 1), s('b', 2, 2)], 0, 2)).toEqual({ kind: 'full' });
  });

  it('takes the agent\'s own limit over the worker-wide one, and 16 by default', () => {
    expect(sessionLimitOf({ 'max-sessions': 2 }, { 'max-sessions-per-agent': 5 })).toBe(2);
    expect(sessionLimitOf({}, { 'max-sessions-per-agent': 5 })).toBe(5);
    expect(sessionLimitOf({}, undefined)).toBe(16);
  });

  it('refuses with limit-reached, naming the agent and the limit', () => {
    const error = limitReached('alice', 3);
    expect(error.toJsonRpcError()).toMatchObject({ code: -32012, data: { reason: 'limit-reached', agent: 'alice', limit: 3 } });
  });
});
