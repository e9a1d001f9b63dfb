import { describe, expect, it } from 'vitest';
import type { WireError } from '../../shared/errors.ts';
import type { LogFields, Logger } from '../log.ts';
import { REFUSAL_LOG_INTERVAL_MS } from '../../shared/coalesced-log.ts';
import { LaunchRate } from './launch-rate.ts';

/** A launch rate on a clock the test moves, and the warnings it logged. */
function rate(burst: number, perMinute: number) {
  let now = 1_000_000;
  const warnings: Array<{ msg: string; fields?: LogFields }> = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (msg, fields) => void warnings.push({ msg, ...(fields ? { fields } : {}) }),
    error: () => {},
    child: () => log,
  };
  const r = new LaunchRate({ limits: { burst, perMinute }, log, now: () => now });
  const refusal = (agent: string, server = 'echo'): WireError => {
    try {
      r.take(agent, server);
    } catch (error) {
      return error as WireError;
    }
    throw new Error(`${agent}'s launch of ${server} was not refused`);
  };
  return { r, warnings, refusal, advance: (ms: number) => void (now += ms) };
}

describe('launch rate', () => {
  it('lets an agent make its burst at once, refuses the next with limit-reached saying when to retry, and gives one back per refill interval', () => {
    const { r, refusal, advance } = rate(3, 30);
    for (let i = 0; i < 3; i++) r.take('alice', 'echo');
    const error = refusal('alice');
    expect(error.reason).toBe('limit-reached');
    expect(error.message).toBe('Server "echo" cannot start: agent "alice" started server processes on this host faster than its launch rate allows (3 at once, then 30 a minute); retry in 2 s, or raise "limits" in the host\'s sidecar.json');
    advance(1_999);
    expect(refusal('alice').message).toMatch(/retry in 1 s/);
    advance(1);
    r.take('alice', 'echo');
    expect(() => r.take('alice', 'echo')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
  });

  it('keeps a bucket per agent: one agent past its rate never holds back another', () => {
    const { r, refusal } = rate(2, 60);
    r.take('alice', 'a');
    r.take('alice', 'b');
    expect(refusal('alice').reason).toBe('limit-reached');
    r.take('bob', 'a');
    r.take('bob', 'b');
    expect(r.available('alice')).toBe(0);
    expect(r.available('carol')).toBe(2);
  });

  it('refills no further than the burst, however long the agent was quiet', () => {
    const { r, refusal, advance } = rate(2, 60);
    r.take('alice', 'a');
    advance(3_600_000);
    expect(r.available('alice')).toBe(2);
    r.take('alice', 'a');
    r.take('alice', 'a');
    expect(refusal('alice').reason).toBe('limit-reached');
  });

  it('logs refusals once a minute per agent, with how many there were, not once per refusal', () => {
    const { r, warnings, refusal, advance } = rate(1, 1);
    r.take('alice', 'a');
    for (let i = 0; i < 50; i++) refusal('alice');
    r.take('bob', 'a');
    refusal('bob');
    expect(warnings.map((w) => [w.msg, w.fields?.agent, w.fields?.refused])).toEqual([
      ['Server launch refused: launch rate reached', 'alice', 1],
      ['Server launch refused: launch rate reached', 'bob', 1],
    ]);
    advance(REFUSAL_LOG_INTERVAL_MS - 1);
    refusal('alice');
    expect(warnings).toHaveLength(2);
    advance(1);
    r.take('alice', 'a'); // the one launch a minute gives back
    refusal('alice');
    expect(warnings.map((w) => w.fields?.refused)).toEqual([1, 1, 51]);
  });

  it('starts a warm pool\'s spare only while the agent keeps half its burst, so spares never cost its sessions a launch', () => {
    const { r, refusal } = rate(4, 60);
    expect(r.trySpare('alice')).toBe(true); // 3 left
    expect(r.trySpare('alice')).toBe(true); // 2 left: half the burst
    expect(r.trySpare('alice')).toBe(false);
    expect(r.available('alice')).toBe(2);
    r.take('alice', 'a');
    r.take('alice', 'b');
    expect(refusal('alice').reason).toBe('limit-reached');
    expect(r.trySpare('alice')).toBe(false);
  });

  it('takes back a launch that did not happen', () => {
    const { r } = rate(1, 1);
    r.take('alice', 'a');
    r.giveBack('alice');
    r.take('alice', 'a');
    expect(r.available('alice')).toBe(0);
  });

  it('with 0 a minute has no rate at all, and new limits apply from the next launch', () => {
    const { r, refusal, warnings } = rate(1, 0);
    for (let i = 0; i < 100; i++) r.take('alice', 'a');
    expect(r.trySpare('alice')).toBe(true);
    expect(r.available('alice')).toBe(Infinity);
    r.setLimits({ burst: 1, perMinute: 1 });
    r.take('alice', 'a');
    expect(refusal('alice').reason).toBe('limit-reached');
    r.setLimits({ burst: 1, perMinute: 0 });
    r.take('alice', 'a');
    expect(warnings).toHaveLength(1);
  });
});
