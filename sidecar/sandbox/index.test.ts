import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalError, WireError } from '../../shared/errors.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE, type NetworkCapability } from '../trust/effective-profile.ts';
import { bubblewrapProbe, compileContainment, containmentRequired, type ContainmentProbe, userModeNetworkProbe } from './index.ts';

const launch = { file: process.execPath, args: ['-e', '1'] };
const grant = { sourcePath: '/srv', targetPath: '/srv', accessMode: 'read-only' as const };

function p(paths: boolean, network: NetworkCapability[] | undefined, extra: Partial<EffectiveProfile> = {}): EffectiveProfile {
  return { ...NEUTRAL_PROFILE, filesystemPaths: paths ? [grant] : [], networkCapabilities: network, ...extra };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sy-probe-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('containmentRequired', () => {
  it.each<[string, EffectiveProfile, boolean]>([
    ['nothing at all', NEUTRAL_PROFILE, false],
    ['only environment and tool-call rules', p(false, undefined, { environment: { inherit: ['PATH'], set: {} }, restrictedToolCalls: [true] }), false],
    ['an empty network list', p(false, []), true],
    ['loopback', p(false, ['loopback']), true],
    ['internet-client', p(false, ['internet-client']), true],
    ['a filesystem grant with an unconstrained network', p(true, undefined), true],
    ['a grant and no network', p(true, []), true],
  ])('%s → %s', (_name, effective, required) => {
    expect(containmentRequired(effective)).toBe(required);
  });
});

describe('compileContainment', () => {
  const failing: ContainmentProbe = async () => ({ available: false, problem: 'unusable', message: 'Containment unavailable: test' });

  it('returns null for an unconstrained profile on any platform, without probing', async () => {
    for (const platform of ['linux', 'darwin', 'win32'] as const) {
      expect(await compileContainment(NEUTRAL_PROFILE, launch, { revision: 'sha256:r', platform, probe: failing })).toBeNull();
    }
  });

  it('returns a bubblewrap policy for a constrained profile on Linux', async () => {
    const policy = await compileContainment(p(true, []), launch, { revision: 'sha256:r', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') });
    expect(policy).toMatchObject({ backend: 'bubblewrap', executable: '/usr/bin/bwrap', revision: 'sha256:r' });
    expect(policy?.backend === 'bubblewrap' && policy.args).toContain('--unshare-all');
  });

  it('fails closed with an actionable message when bwrap is missing', async () => {
    const error = (await failure(compileContainment(p(true, []), launch, { revision: 'sha256:r', platform: 'linux', probe: bubblewrapProbe('/nonexistent/bwrap') }))) as WireError;
    expect(error).toBeInstanceOf(WireError);
    expect(error.reason).toBe('containment-unavailable');
    expect(error.message).toContain('install it');
  });

  it('says why containment is unavailable in the sidecar\'s log, once per reason, as well as to the agent', async () => {
    const warned: Array<Record<string, unknown> | undefined> = [];
    const log = { debug() {}, info() {}, error() {}, warn: (msg: string, fields?: Record<string, unknown>) => void warned.push({ msg, ...fields }), child: () => log } as never;
    const probe = (message: string): ContainmentProbe => async () => ({ available: false, problem: 'unusable', message });
    for (const why of ['Containment unavailable: first', 'Containment unavailable: first', 'Containment unavailable: second']) {
      await failure(compileContainment(p(true, []), launch, { revision: 'sha256:r', platform: 'linux', probe: probe(why), log }));
    }
    expect(warned).toEqual([
      { msg: 'Containment unavailable: launches that need it are refused', backend: 'bubblewrap', why: 'Containment unavailable: first' },
      { msg: 'Containment unavailable: launches that need it are refused', backend: 'bubblewrap', why: 'Containment unavailable: second' },
    ]);
  });

  it('fails closed with the user-namespace advice when bwrap cannot sandbox', async () => {
    const fake = join(dir, 'bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    const error = (await failure(compileContainment(p(false, []), launch, { revision: 'sha256:r', platform: 'linux', probe: bubblewrapProbe(fake) }))) as WireError;
    expect(error.reason).toBe('containment-unavailable');
    expect(error.message).toContain('No permissions to create new namespace');
    expect(error.message).toContain('unprivileged user namespaces');
  });

  it.each(['win32', 'freebsd', 'aix'] as const)('fails closed on %s', async (platform) => {
    const error = (await failure(compileContainment(p(true, []), launch, { revision: 'sha256:r', platform }))) as WireError;
    expect(error.reason).toBe('containment-unavailable');
    expect(error.message).toContain(`"${platform}"`);
  });

  it('compiles a Seatbelt policy on macOS and fails closed on what Seatbelt cannot enforce', async () => {
    const probe: ContainmentProbe = async () => ({ available: true, executable: '/usr/bin/sandbox-exec' });
    const policy = await compileContainment(p(true, []), launch, { revision: 'sha256:r', platform: 'darwin', probe });
    expect(policy).toMatchObject({ backend: 'seatbelt', executable: '/usr/bin/sandbox-exec', revision: 'sha256:r' });
    const error = (await failure(compileContainment(p(true, ['loopback']), launch, { revision: 'sha256:r', platform: 'darwin', probe }))) as WireError;
    expect(error.reason).toBe('containment-unavailable');
  });

  it('fails closed with containment-unavailable naming slirp4netns when internet-client has no user-mode network', async () => {
    const options = { revision: 'sha256:r', platform: 'linux' as const, probe: bubblewrapProbe('/usr/bin/bwrap'), networkProbe: userModeNetworkProbe('/nonexistent/slirp4netns') };
    const error = (await failure(compileContainment(p(false, ['internet-client']), launch, options))) as WireError;
    expect(error.reason).toBe('containment-unavailable');
    expect(error.message).toContain('slirp4netns');
    expect(error.message).toContain('apt-get install slirp4netns');
    expect(await compileContainment(p(false, ['loopback']), launch, options)).toMatchObject({ backend: 'bubblewrap', network: 'loopback' });
  });

  it('refuses a command that was not resolved to an absolute path', async () => {
    const error = await failure(compileContainment(p(true, []), { file: 'node', args: [] }, { revision: 'sha256:r', platform: 'linux' }));
    expect(error).toBeInstanceOf(LocalError);
    expect((error as LocalError).code).toBe('invalid-launch');
  });
});
