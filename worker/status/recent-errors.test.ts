import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_LENGTH, RecentErrors, scrubMessage } from './recent-errors.ts';

/** A clock that moves one second per reading, so each entry has its own time. */
function ticking(): () => Date {
  let t = Date.parse('2026-01-01T00:00:00Z');
  return () => new Date((t += 1000));
}

const offline = { reason: 'host-offline' as const, server: 'files', agent: 'alice', message: 'Host "laptop" is offline' };

describe('RecentErrors', () => {
  it('lists failures newest first with time, reason, server, agent and message', () => {
    const errors = new RecentErrors({ now: ticking() });
    errors.record(offline);
    errors.record({ reason: 'server-exited', server: 'echo', agent: 'bob', message: 'Server "echo" exited with code 1' });
    expect(errors.list()).toEqual([
      { time: '2026-01-01T00:00:02.000Z', reason: 'server-exited', server: 'echo', agent: 'bob', message: 'Server "echo" exited with code 1', count: 1 },
      { time: '2026-01-01T00:00:01.000Z', reason: 'host-offline', server: 'files', agent: 'alice', message: 'Host "laptop" is offline', count: 1 },
    ]);
  });

  it('keeps at most its capacity, dropping the oldest first', () => {
    const errors = new RecentErrors({ capacity: 3, now: ticking() });
    for (let i = 0; i < 5; i++) errors.record({ ...offline, server: `s${i}` });
    expect(errors.size).toBe(3);
    expect(errors.list().map((e) => e.server)).toEqual(['s4', 's3', 's2']);
  });

  it('folds a repeated failure into one entry that counts and becomes the newest', () => {
    const errors = new RecentErrors({ capacity: 3, now: ticking() });
    errors.record(offline);
    errors.record({ ...offline, server: 'other' });
    errors.record(offline);
    errors.record(offline);
    expect(errors.list()).toEqual([
      expect.objectContaining({ server: 'files', count: 3, time: '2026-01-01T00:00:04.000Z' }),
      expect.objectContaining({ server: 'other', count: 1 }),
    ]);
  });

  it('does not let one flapping failure push the others out', () => {
    const errors = new RecentErrors({ capacity: 2 });
    errors.record({ ...offline, server: 'quiet' });
    for (let i = 0; i < 100; i++) errors.record(offline);
    expect(errors.list().map((e) => [e.server, e.count])).toEqual([['files', 100], ['quiet', 1]]);
  });

  it('shows an agent only its own failures', () => {
    const errors = new RecentErrors();
    errors.record(offline);
    errors.record({ ...offline, agent: 'bob' });
    errors.record({ ...offline, agent: null });
    expect(errors.list('bob').map((e) => e.agent)).toEqual(['bob']);
    expect(errors.list().length).toBe(3);
  });

  it('hands out copies that cannot change the buffer', () => {
    const errors = new RecentErrors();
    errors.record(offline);
    errors.list()[0]!.message = 'changed';
    expect(errors.list()[0]!.message).toBe(offline.message);
    expect(Object.keys(errors.list()[0]!).sort()).toEqual(['agent', 'count', 'message', 'reason', 'server', 'time']);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new RecentErrors({ capacity: 0 })).toThrow(RangeError);
    expect(() => new RecentErrors({ capacity: 1.5 })).toThrow(/positive integer/);
  });
});

describe('scrubMessage', () => {
  it('removes URL credentials, query strings and bearer tokens', () => {
    const text = scrubMessage('fetch https://user:hunt@r2@docs.example.com/mcp?key=s3cr3t#access_token=fr4g failed; sent Bearer abc.def');
    expect(text).toBe('fetch https://[redacted]@docs.example.com/mcp?[redacted]#[redacted] failed; sent Bearer [redacted]');
    expect(text).not.toMatch(/hunt|r2@|s3cr3t|fr4g|abc\.def/);
  });

  it('leaves ordinary messages alone and bounds long ones', () => {
    expect(scrubMessage('Host "laptop" is offline: its sidecar has no live link')).toBe('Host "laptop" is offline: its sidecar has no live link');
    const long = scrubMessage('x'.repeat(5000));
    expect(long.length).toBe(MAX_MESSAGE_LENGTH);
    expect(long.endsWith('…')).toBe(true);
  });

  it('is applied to every recorded message', () => {
    const errors = new RecentErrors();
    errors.record({ ...offline, message: 'Could not open http://a:b@h/mcp?token=t' });
    expect(errors.list()[0]!.message).toBe('Could not open http://[redacted]@h/mcp?[redacted]');
  });

  it('shows what another place handed over beside its own, newest first, each place\'s replacing its last, within capacity', () => {
    const errors = new RecentErrors({ capacity: 3, now: () => new Date('2026-12-07T10:00:02.000Z') });
    errors.record({ reason: 'host-offline', server: 'docs', agent: 'alice', message: 'Host "laptop" is offline' });
    const hosts = (time: string, agent: string) => ({ time, reason: 'launch-failed' as const, server: 'files', agent, message: 'Could not open https://u:hunter2@x.example/?t=1', count: 2 });
    errors.fromElsewhere('host:laptop', [hosts('2026-12-07T10:00:03.000Z', 'alice'), hosts('2026-12-07T10:00:01.000Z', 'bob')]);
    expect(errors.list().map((e) => [e.time, e.agent, e.reason])).toEqual([
      ['2026-12-07T10:00:03.000Z', 'alice', 'launch-failed'],
      ['2026-12-07T10:00:02.000Z', 'alice', 'host-offline'],
      ['2026-12-07T10:00:01.000Z', 'bob', 'launch-failed'],
    ]);
    expect(errors.list('bob')).toHaveLength(1);
    // Scrubbed again here: a secret another place let through is not shown.
    expect(errors.list().map((e) => e.message).join(' ')).not.toMatch(/hunter2|t=1/);
    // The same failure here and there is one entry, its counts added up.
    errors.record({ reason: 'launch-failed', server: 'files', agent: 'bob', message: 'Could not open https://u:hunter2@x.example/?t=1' });
    expect(errors.list('bob')).toEqual([expect.objectContaining({ count: 3, time: '2026-12-07T10:00:02.000Z' })]);
    // The place's next handover replaces its last one; an empty one clears it.
    errors.fromElsewhere('host:laptop', []);
    expect(errors.list().map((e) => e.reason)).toEqual(['launch-failed', 'host-offline']);
  });
});
