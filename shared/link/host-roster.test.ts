import { describe, expect, it } from 'vitest';
import { frameSchema } from '../frames.ts';
import { MAX_ROSTER_AGENTS, MAX_ROSTER_SERVERS, rosterCheck, rosterFits } from './host-roster.ts';

describe('host roster', () => {
  it('keeps exactly the agent and server pairs it names', () => {
    const keeps = rosterCheck([{ agent: 'alice', servers: ['files', 'notes'] }, { agent: 'bob', servers: ['files'] }]);
    expect(keeps('alice', 'notes')).toBe(true);
    expect(keeps('bob', 'files')).toBe(true);
    expect(keeps('bob', 'notes')).toBe(false);
    expect(keeps('carol', 'files')).toBe(false);
    expect(rosterCheck([])('alice', 'files')).toBe(false);
  });

  it('is read from a link-roster frame only with valid names, no other key, and within its bounds', () => {
    const frame = (agents: unknown, extra: Record<string, unknown> = {}) => frameSchema().safeParse({ v: 1, type: 'link-roster', agents, ...extra }).success;
    expect(frame([{ agent: 'alice', servers: ['files'] }])).toBe(true);
    expect(frame([])).toBe(true);
    expect(frame([{ agent: '../alice', servers: ['files'] }])).toBe(false);
    expect(frame([{ agent: 'alice', servers: ['has space'] }])).toBe(false);
    expect(frame([{ agent: 'alice', servers: ['files'], revision: 'x' }])).toBe(false);
    expect(frame([{ agent: 'alice', servers: ['files'] }], { command: 'rm' })).toBe(false);
    const many = Array.from({ length: MAX_ROSTER_AGENTS + 1 }, (_, i) => ({ agent: `a${i}`, servers: ['s'] }));
    expect(frame(many)).toBe(false);
    expect(rosterFits(many)).toBe(false);
    expect(rosterFits(many.slice(1))).toBe(true);
    const wide = [{ agent: 'alice', servers: Array.from({ length: MAX_ROSTER_SERVERS + 1 }, (_, i) => `s${i}`) }];
    expect(frame(wide)).toBe(false);
    expect(rosterFits(wide)).toBe(false);
  });
});
