import { describe, expect, it } from 'vitest';
import type { WireError } from '../../shared/errors.ts';
import { silentLogger } from '../log.ts';
import { ProcessBudget } from './process-budget.ts';

function budget(perAgent: number, total: number) {
  let now = 0;
  const b = new ProcessBudget({ limits: { perAgent, total }, log: silentLogger, now: () => now++ });
  const ended: string[] = [];
  const take = (agent: string, server: string) => {
    const reserved = b.reserve(agent, server);
    reserved.bind((error: WireError) => ended.push(`${agent}/${server}:${error.reason}`));
    return reserved.slot;
  };
  return { b, ended, take };
}

describe('process budget', () => {
  it('ends the agent\'s least recently used idle process past its limit, never a busy one or another agent\'s', () => {
    const { b, ended, take } = budget(2, 10);
    const busy = take('alice', 'a');
    take('bob', 'x');
    take('alice', 'b');
    busy.inFlight(1);
    take('alice', 'c');
    expect(ended).toEqual(['alice/b:limit-reached']);
    expect(b.count('alice')).toBe(2);
    expect(b.count('bob')).toBe(1);
  });

  it('refuses with limit-reached when every process of the agent is busy', () => {
    const { ended, take } = budget(1, 10);
    take('alice', 'a').inFlight(1);
    expect(() => take('alice', 'b')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    expect(ended).toEqual([]);
  });

  it('at the host cap ends only the asking agent\'s own idle process, and refuses when it has none', () => {
    const { ended, take } = budget(10, 3);
    take('bob', 'x');
    take('alice', 'a');
    take('carol', 'y').inFlight(1);
    take('alice', 'b');
    expect(ended).toEqual(['alice/a:limit-reached']);
    expect(() => take('dave', 'z')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    expect(ended).toEqual(['alice/a:limit-reached']);
  });

  it('counts a released slot no more, and applies new limits from the next launch', () => {
    const { b, ended, take } = budget(1, 10);
    take('alice', 'a').release();
    take('alice', 'b');
    expect(ended).toEqual([]);
    b.setLimits({ perAgent: 2, total: 10 });
    take('alice', 'c');
    expect(ended).toEqual([]);
    expect(b.count()).toBe(2);
  });

  it('gives a warm pool\'s spare only free room, never ending a process for it', () => {
    const { b, ended, take } = budget(2, 10);
    take('alice', 'a');
    expect(b.hasRoom('alice')).toBe(true);
    b.reserve('alice', 'spare', { evict: false });
    expect(b.hasRoom('alice')).toBe(false);
    expect(() => b.reserve('alice', 'spare', { evict: false })).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    expect(ended).toEqual([]);
  });

  it('ends another agent\'s spare no session took for a launch at the host cap, before any idle process of the agent\'s own; a spare a session took is that session\'s (review s19)', () => {
    const { b, ended, take } = budget(4, 3);
    const spare = (agent: string, server: string) => {
      const reserved = b.reserve(agent, server, { evict: false });
      reserved.bind((error: WireError) => ended.push(`${agent}/${server}:${error.reason}`));
      return reserved.slot;
    };
    take('alice', 'a').inFlight(1);
    spare('alice', 'pooled');
    const taken = spare('alice', 'taken');
    taken.adopt();
    // The host is full: bob's launch ends alice's spare, not her sessions' processes.
    take('bob', 'x');
    expect(ended).toEqual(['alice/pooled:limit-reached']);
    // alice's adopted spare is a session's process now: carol's launch finds nothing it may end.
    expect(() => take('carol', 'y')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    // And a spare never takes room that is not free.
    expect(() => spare('bob', 'pooled')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    expect([b.count(), ended]).toEqual([3, ['alice/pooled:limit-reached']]);
  });

  it('ends the agent\'s own spare before its idle session processes past its own limit', () => {
    const { ended, take, b } = budget(2, 10);
    take('alice', 'a');
    b.reserve('alice', 'pooled', { evict: false }).bind((error: WireError) => ended.push(`alice/pooled:${error.reason}`));
    take('alice', 'b');
    expect(ended).toEqual(['alice/pooled:limit-reached']);
  });
});
