import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BackendAvailability, cachedProbe, isLastingRun, type ProbeRun } from './availability.ts';
import { bubblewrapExecutable, bubblewrapProbe } from './bubblewrap/bubblewrap-probe.ts';
import { userModeNetworkExecutable, userModeNetworkProbe } from './bubblewrap/user-mode-network.ts';

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

// A PATH entry a contained server can write (here: everyone can), first on the sidecar's PATH.
describe.runIf(process.platform === 'linux' && existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/slirp4netns'))('the sandbox tools on the sidecar\'s PATH', () => {
  it('are never taken from a directory a server could have written them to, and a refused one is never run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-planted-'));
    const planted = join(dir, 'bin');
    const saved = process.env['PATH'];
    try {
      mkdirSync(planted, { mode: 0o777 });
      chmodSync(planted, 0o777);
      for (const name of ['bwrap', 'slirp4netns']) writeFileSync(join(planted, name), `#!/bin/sh\ntouch "${dir}/ran"\n`, { mode: 0o755 });
      process.env['PATH'] = `${planted}:/usr/bin:/bin`;
      expect(bubblewrapExecutable()).toBe('/usr/bin/bwrap');
      expect(userModeNetworkExecutable()).toBe('/usr/bin/slirp4netns');
      // Named back, as switchyard doctor names what it was given, the refused file still does not run.
      expect(await bubblewrapProbe(join(planted, 'bwrap'))()).toEqual({
        available: false,
        problem: 'missing',
        message: `Containment unavailable: bubblewrap "${planted}/bwrap" is not used, since a contained server could have put it there: "${planted}" is writable by its group or by everyone; install bubblewrap with the OS package manager, e.g. apt-get install bubblewrap, and keep directories the sidecar's user can write off its PATH`,
      });
      expect(await userModeNetworkProbe(join(planted, 'slirp4netns'))()).toMatchObject({ available: false, message: expect.stringContaining(`"${planted}/slirp4netns" is not used`) });
      expect(existsSync(join(dir, 'ran'))).toBe(false);
    } finally {
      process.env['PATH'] = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
