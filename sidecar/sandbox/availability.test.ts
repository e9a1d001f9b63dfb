import { describe, expect, it } from 'vitest';
import { type BackendAvailability, cachedProbe, isLastingRun, type ProbeRun } from './availability.ts';

const unusable: BackendAvailability = { available: false, problem: 'unusable', message: 'Containment unavailable: from the test' };
const available: BackendAvailability = { available: true, executable: '/usr/bin/tool' };

describe('a cached probe', () => {
  it('runs once per executable and keeps a lasting verdict, shared by callers while it runs', async () => {
    const cache = new Map<string, Promise<BackendAvailability>>();
    let runs = 0;
    const run = async (): Promise<ProbeRun> => (runs++, { lasting: true, availability: unusable });
    const [a, b] = await Promise.all([cachedProbe(cache, '/usr/bin/tool', run), cachedProbe(cache, '/usr/bin/tool', run)]);
    expect(await cachedProbe(cache, '/usr/bin/tool', run)).toBe(a);
    expect([a, b, runs]).toEqual([unusable, unusable, 1]);
    await cachedProbe(cache, '/usr/bin/other', run);
    expect(runs).toBe(2);
  });

  it('checks again after a run that could not check (the tool never ran)', async () => {
    const cache = new Map<string, Promise<BackendAvailability>>();
    const runs: ProbeRun[] = [{ lasting: false, availability: unusable }, { lasting: true, availability: available }];
    const run = async (): Promise<ProbeRun> => runs.shift()!;
    expect(await cachedProbe(cache, '/usr/bin/tool', run)).toEqual(unusable);
    expect(await cachedProbe(cache, '/usr/bin/tool', run)).toEqual(available);
    expect(await cachedProbe(cache, '/usr/bin/tool', run)).toEqual(available);
    expect(runs).toEqual([]);
  });
});

describe('whether a helper run says something lasting about the host', () => {
  it('does when the tool ran to its end, or is not installed', () => {
    expect(isLastingRun({})).toBe(true);
    expect(isLastingRun({ errno: 'ENOENT' })).toBe(true);
  });

  it('does not when the spawn ran out of descriptors, or the run was killed for its time', () => {
    expect(isLastingRun({ errno: 'EMFILE' })).toBe(false);
    expect(isLastingRun({ timedOut: true })).toBe(false);
  });
});
