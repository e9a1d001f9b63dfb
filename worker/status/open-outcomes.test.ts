import { describe, expect, it } from 'vitest';
import { OpenOutcomeEntry, OpenOutcomes } from './open-outcomes.ts';
import * as z from '../../shared/zod.ts';

const OpenOutcomeList = z.array(OpenOutcomeEntry);

const at = (iso: string) => () => new Date(iso);

describe('OpenOutcomes', () => {
  it('holds a server failing for an agent from its failed open until one succeeds', () => {
    const outcomes = new OpenOutcomes({ now: at('2026-12-07T10:00:00.000Z') });
    expect(outcomes.failure('files', 'alice')).toBeUndefined();
    outcomes.failed('alice', 'files', 'launch-failed', 'Cannot start process: spawn failed: ENOENT');
    expect(outcomes.failure('files', 'alice')).toEqual({ reason: 'launch-failed', message: 'Cannot start process: spawn failed: ENOENT', time: '2026-12-07T10:00:00.000Z' });
    expect(outcomes.failure('files', 'bob')).toBeUndefined();
    outcomes.opened('alice', 'files');
    expect(outcomes.failure('files', 'alice')).toBeUndefined();
  });

  it('gives the admin the latest open of any agent, naming whose it was', () => {
    const outcomes = new OpenOutcomes({ now: at('2026-12-07T10:00:00.000Z') });
    outcomes.failed('alice', 'files', 'trust-profile-stale', 'Trust profile "workspace" changed');
    expect(outcomes.failure('files')).toMatchObject({ reason: 'trust-profile-stale', agent: 'alice' });
    // bob's open since succeeded: the server serves; alice's pin is hers to see.
    outcomes.opened('bob', 'files');
    expect(outcomes.failure('files')).toBeUndefined();
    expect(outcomes.failure('files', 'alice')).toMatchObject({ reason: 'trust-profile-stale' });
    outcomes.failed('bob', 'files', 'server-not-found', 'Server "files" is not configured on host "laptop"');
    expect(outcomes.failure('files')).toMatchObject({ reason: 'server-not-found', agent: 'bob' });
    expect(outcomes.failure('docs')).toBeUndefined();
  });

  it('counts only failures that say something of the server (a dropped link does not: review s31), and no open without an agent', () => {
    const outcomes = new OpenOutcomes();
    for (const reason of ['limit-reached', 'config-changed', 'shutdown', 'unauthorized', 'invalid-request', 'denied-by-policy', 'host-offline'] as const) outcomes.failed('alice', 'files', reason, 'no');
    outcomes.failed(null, 'files', 'launch-failed', 'no');
    expect(outcomes.failure('files')).toBeUndefined();
  });

  it('keeps no secret a message carries, and forgets the oldest pair past its capacity', () => {
    const outcomes = new OpenOutcomes({ capacity: 2 });
    outcomes.failed('alice', 'files', 'launch-failed', 'Could not open https://user:hunter2@files.example.com/mcp?token=abc: Bearer sk-123');
    expect(outcomes.failure('files', 'alice')?.message).not.toMatch(/hunter2|abc|sk-123/);
    outcomes.failed('alice', 'docs', 'launch-failed', 'no');
    outcomes.failed('bob', 'docs', 'launch-failed', 'no');
    expect(outcomes.failure('files', 'alice')).toBeUndefined();
    expect(outcomes.failure('docs', 'alice')).toMatchObject({ reason: 'launch-failed' });
  });

  it('hands its outcomes elsewhere and takes others\' in, the newer of each pair winning (a host\'s Durable Object to the edge)', () => {
    let now = '2026-12-07T10:00:00.000Z';
    const object = new OpenOutcomes({ now: () => new Date(now) });
    const edge = new OpenOutcomes({ now: () => new Date(now) });
    object.failed('alice', 'files', 'launch-failed', 'Cannot start process');
    edge.merge(OpenOutcomeList.parse(JSON.parse(JSON.stringify(object.entries()))));
    expect(edge.failure('files', 'alice')).toEqual({ reason: 'launch-failed', message: 'Cannot start process', time: '2026-12-07T10:00:00.000Z' });
    // Served since, in the object: the next read says so.
    now = '2026-12-07T10:00:05.000Z';
    object.opened('alice', 'files');
    edge.merge(object.entries());
    expect(edge.failure('files', 'alice')).toBeUndefined();
    // An older outcome read late does not undo a newer one.
    const stale = new OpenOutcomes({ now: () => new Date('2026-12-07T09:00:00.000Z') });
    stale.failed('alice', 'files', 'launch-failed', 'Cannot start process');
    edge.merge(stale.entries());
    expect(edge.failure('files', 'alice')).toBeUndefined();
    // Of one millisecond, the sender's latest wins where it says otherwise (review s33).
    const tied = new OpenOutcomes({ now: () => new Date(now) });
    tied.opened('bob', 'files');
    edge.merge(tied.entries());
    tied.failed('bob', 'files', 'launch-failed', 'Cannot start process');
    edge.merge(tied.entries());
    expect(edge.failure('files', 'bob')).toMatchObject({ reason: 'launch-failed' });
    // What another place sends is checked: a reason no runtime has is refused.
    expect(OpenOutcomeList.safeParse([{ agent: 'alice', server: 'files', failure: { reason: 'made-up', message: '', time: now }, time: 1 }]).success).toBe(false);
  });
});
