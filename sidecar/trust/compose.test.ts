import { describe, expect, it } from 'vitest';
import { composeProfile, narrow, underFloor, widen } from './compose.ts';
import { type EffectiveProfile, type FilesystemGrant, NEUTRAL_PROFILE, type NetworkCapability } from './effective-profile.ts';

/** `'rw:/a'`, `'ro:/a'`, `'rw:/a=>/mnt'` → a grant. */
function g(spec: string): FilesystemGrant {
  const [mode, paths] = [spec.slice(0, 2), spec.slice(3)];
  const [sourcePath, targetPath] = paths.split('=>') as [string, string | undefined];
  return { sourcePath, targetPath: targetPath ?? sourcePath, accessMode: mode === 'rw' ? 'read-write' : 'read-only' };
}

function p(paths: string[], network?: NetworkCapability[], extra: Partial<EffectiveProfile> = {}): EffectiveProfile {
  return { ...NEUTRAL_PROFILE, filesystemPaths: paths.map(g), networkCapabilities: network, ...extra };
}

type Net = NetworkCapability[] | undefined;

describe('restrictive composition (child ∧ base)', () => {
  it.each<[string, string[], string[], string[]]>([
    ['keeps a child path under a base grant, read-only wins', ['rw:/p/x'], ['ro:/p'], ['ro:/p/x']],
    ['keeps a base path under a child grant', ['rw:/p'], ['rw:/p/x'], ['rw:/p/x']],
    ['keeps read-only when the child asks for less', ['ro:/p/x'], ['rw:/p'], ['ro:/p/x']],
    ['drops paths only one side grants', ['rw:/a', 'rw:/c'], ['ro:/b', 'rw:/c'], ['rw:/c']],
    ['keeps a read-only hole the base carves', ['rw:/a'], ['rw:/a', 'ro:/a/b'], ['rw:/a', 'ro:/a/b']],
    ['keeps a read-only hole the child carves', ['rw:/a', 'ro:/a/b'], ['rw:/a'], ['rw:/a', 'ro:/a/b']],
    ['keeps the child target mapping', ['rw:/a=>/mnt'], ['ro:/a'], ['ro:/a=>/mnt']],
    ['maps a base path through the child mapping', ['rw:/a=>/mnt'], ['rw:/a/b'], ['rw:/a/b=>/mnt/b']],
    // Review s19: bubblewrap mounts by target, so a hole mapped away from its parent's mapping
    // left its path writable through the parent's mount.
    ['keeps the base\'s read-only hole where its parent shows it, whatever target the child asks', ['rw:/p', 'ro:/p/protected=>/elsewhere'], ['rw:/p', 'ro:/p/protected'], ['rw:/p', 'ro:/p/protected']],
    ['moves the hole with a parent the child remaps', ['rw:/p=>/q', 'ro:/p/protected'], ['rw:/p', 'ro:/p/protected'], ['rw:/p=>/q', 'ro:/p/protected=>/q/protected']],
  ])('%s', (_name, child, base, expected) => {
    expect(narrow(p(child, []), p(base, [])).filesystemPaths).toEqual(expected.map(g));
  });

  it.each<[Net, Net, Net]>([
    [undefined, [], []],
    [['internet-client'], ['loopback'], ['loopback']],
    [undefined, ['internet-client'], ['internet-client']],
    [['loopback'], undefined, ['loopback']],
    [[], ['internet-client'], []],
    [undefined, undefined, undefined],
  ])('network %j ∧ %j = %j (the narrower)', (child, base, expected) => {
    expect(narrow(p(['rw:/a'], child), p(['rw:/a'], base)).networkCapabilities).toEqual(expected);
  });

  it.each<[string, EffectiveProfile, EffectiveProfile, EffectiveProfile]>([
    ['a child that constrains nothing takes the base', NEUTRAL_PROFILE, p(['ro:/a'], []), p(['ro:/a'], [])],
    ['a base that constrains nothing leaves the child', p(['ro:/a'], ['loopback']), NEUTRAL_PROFILE, p(['ro:/a'], ['loopback'])],
    ['disjoint paths with open networks stay contained', p(['rw:/a']), p(['rw:/b']), p([], ['internet-client'])],
  ])('%s', (_name, child, base, expected) => {
    expect(narrow(child, base)).toEqual(expected);
  });

  it('lets the base names cap the environment and pins the base values', () => {
    const child = p([], [], { environment: { inherit: ['PATH', 'LANG', 'SECRET'], set: { PATH: '/x', A: '1', B: 'child' } } });
    const base = p([], [], { environment: { inherit: ['PATH', 'LANG'], set: { B: 'base' } } });
    expect(narrow(child, base).environment).toEqual({ inherit: ['PATH', 'LANG'], set: { PATH: '/x', B: 'base' } });
  });

  it('treats a missing environment as neutral', () => {
    const env = { inherit: ['PATH'], set: { A: '1' } };
    expect(narrow(p([], [], { environment: env }), NEUTRAL_PROFILE).environment).toEqual(env);
    expect(narrow(NEUTRAL_PROFILE, p([], [], { environment: env })).environment).toEqual(env);
  });

  it('requires every allow rule (AND) and unites restricted schemas', () => {
    const child = p([], undefined, { allowedToolCalls: { schema: { title: 'c' } }, restrictedToolCalls: [{ title: 'r1' }] });
    const base = p([], undefined, { allowedToolCalls: { all: [{ schema: { title: 'b1' } }, { schema: { title: 'b2' } }] }, restrictedToolCalls: [{ title: 'r1' }, { title: 'r2' }] });
    const out = narrow(child, base);
    expect(out.allowedToolCalls).toEqual({ all: [{ schema: { title: 'c' } }, { schema: { title: 'b1' } }, { schema: { title: 'b2' } }] });
    expect(out.restrictedToolCalls).toEqual([{ title: 'r1' }, { title: 'r2' }]);
    expect(narrow(NEUTRAL_PROFILE, base).allowedToolCalls).toEqual(base.allowedToolCalls);
  });
});

describe('permissive composition (child ∨ base)', () => {
  it.each<[string, string[], string[], string[]]>([
    ['adds a writable base path under a read-only child path', ['ro:/p'], ['rw:/p/x'], ['ro:/p', 'rw:/p/x']],
    ['lets read-write win over a nested read-only path', ['rw:/p'], ['ro:/p/x'], ['rw:/p']],
    ['unites disjoint paths', ['ro:/a'], ['ro:/b'], ['ro:/a', 'ro:/b']],
    ['keeps the child carve-out where the base gives only read-only', ['rw:/a', 'ro:/a/b'], ['ro:/a'], ['rw:/a', 'ro:/a/b']],
    ['lets read-write win on the same path', ['ro:/a'], ['rw:/a'], ['rw:/a']],
  ])('%s', (_name, child, base, expected) => {
    expect(widen(p(child, []), p(base, [])).filesystemPaths).toEqual(expected.map(g));
  });

  it.each<[Net, Net, Net]>([
    [[], ['loopback'], ['loopback']],
    [['loopback'], undefined, undefined],
    [['internet-client'], [], ['internet-client']],
    [[], [], []],
  ])('network %j ∨ %j = %j (the wider)', (child, base, expected) => {
    expect(widen(p(['ro:/a'], child), p(['ro:/a'], base)).networkCapabilities).toEqual(expected);
  });

  it('never makes a contained child uncontained through a base that constrains nothing', () => {
    expect(widen(p(['rw:/a'], []), NEUTRAL_PROFILE)).toEqual(p(['rw:/a'], []));
    expect(widen(NEUTRAL_PROFILE, p(['rw:/a'], []))).toEqual(p(['rw:/a'], []));
  });

  it('unites environment names and lets the child values override', () => {
    const child = p([], [], { environment: { inherit: ['PATH'], set: { A: 'child' } } });
    const base = p([], [], { environment: { inherit: ['LANG', 'PATH'], set: { A: 'base', B: 'base' } } });
    expect(widen(child, base).environment).toEqual({ inherit: ['PATH', 'LANG'], set: { A: 'child', B: 'base' } });
  });

  it('accepts either allow rule (OR) and keeps restricted schemas from both', () => {
    const child = p([], undefined, { allowedToolCalls: { schema: { title: 'c' } }, restrictedToolCalls: [{ title: 'r1' }] });
    const base = p([], undefined, { allowedToolCalls: { schema: { title: 'b' } }, restrictedToolCalls: [{ title: 'r2' }] });
    const out = widen(child, base);
    expect(out.allowedToolCalls).toEqual({ any: [{ schema: { title: 'c' } }, { schema: { title: 'b' } }] });
    expect(out.restrictedToolCalls).toEqual([{ title: 'r1' }, { title: 'r2' }]);
  });
});

describe('composeProfile', () => {
  it('applies restrictive bases as ceilings whatever their position', () => {
    const own = p(['rw:/a'], ['internet-client']);
    const out = composeProfile(own, [
      { profile: p(['rw:/a'], []), mode: 'restrictive' },
      { profile: p(['rw:/b'], undefined), mode: 'permissive' },
    ]);
    expect(out).toEqual(p(['rw:/a'], []));
  });

  it('widens with every permissive base before narrowing', () => {
    const own = p(['ro:/a'], []);
    const out = composeProfile(own, [
      { profile: p(['rw:/a/x'], ['loopback']), mode: 'permissive' },
      { profile: p(['ro:/b'], []), mode: 'permissive' },
    ]);
    expect(out).toEqual(p(['ro:/a', 'ro:/b', 'rw:/a/x'], ['loopback']));
  });
});

describe('underFloor', () => {
  it('never widens the floor: a path only the agent grants is dropped, the network is cut to the floor\'s, both tool rules apply', () => {
    const floor = p(['rw:/srv/shared'], [], { allowedToolCalls: { schema: { title: 'floor' } } });
    const requested = p(['rw:/srv/shared', 'rw:/home/alice'], ['internet-client'], { allowedToolCalls: { schema: { title: 'agent' } } });
    const out = underFloor(requested, floor);
    expect(out.filesystemPaths).toEqual(p(['rw:/srv/shared'], []).filesystemPaths);
    expect(out.networkCapabilities).toEqual([]);
    expect(out.allowedToolCalls).toEqual({ all: [{ schema: { title: 'agent' } }, { schema: { title: 'floor' } }] });
  });

  it('keeps the floor\'s read-only hole under its writable parent whatever target the agent asks for it (review s19)', () => {
    const floor = p(['rw:/srv', 'ro:/srv/protected'], []);
    const out = underFloor(p(['rw:/srv', 'ro:/srv/protected=>/elsewhere'], []), floor);
    expect(out.filesystemPaths).toEqual(p(['rw:/srv', 'ro:/srv/protected'], []).filesystemPaths);
  });

  it('keeps a request that is narrower than the floor, and the floor for a request that says nothing', () => {
    const floor = p(['rw:/srv'], ['loopback']);
    expect(underFloor(p(['ro:/srv/docs'], []), floor)).toEqual(p(['ro:/srv/docs'], []));
    expect(underFloor(NEUTRAL_PROFILE, floor)).toEqual(floor);
  });

  it('passes no name of the sidecar\'s environment that the floor does not: a floor silent on it passes none, whatever the request lists', () => {
    const floor = p(['rw:/srv'], []);
    const requested = { ...p(['rw:/srv'], []), environment: { inherit: ['GITHUB_TOKEN', 'LANG'], set: { MODE: 'ci' } } };
    expect(underFloor(requested, floor).environment).toEqual({ inherit: [], set: {} });
    const floorWithLang = { ...floor, environment: { inherit: ['LANG'], set: {} } };
    expect(underFloor(requested, floorWithLang).environment).toEqual({ inherit: ['LANG'], set: {} });
  });
});
