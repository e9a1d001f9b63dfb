import { describe, expect, it } from 'vitest';
import { narrow } from '../sidecar/trust/compose.ts';
import type { EffectiveProfile } from '../sidecar/trust/effective-profile.ts';
import { droppedEnvironment, narrowedByBases } from './check-profile-narrowing.ts';

const profile = (environment: EffectiveProfile['environment']): EffectiveProfile => ({ filesystemPaths: [], networkCapabilities: [], environment, allowedToolCalls: undefined, restrictedToolCalls: [] });

describe('droppedEnvironment', () => {
  it('names each inherited and set name a restrictive base drops, and a value the base overrides', () => {
    const child = { inherit: ['PATH', 'HOME'], set: { NODE_ENV: 'production', LANG: 'C', TZ: 'UTC' } };
    const base = { inherit: ['PATH', 'LANG', 'TZ'], set: { TZ: 'Europe/Paris' } };
    const composed = narrow(profile(child), profile(base)).environment;
    expect(droppedEnvironment(child, composed)).toEqual([
      { path: 'environment.inherit[1]', message: '"HOME" is not passed: a restrictive base does not inherit it (add it to that base\'s "inherit")' },
      { path: 'environment.set.NODE_ENV', message: '"NODE_ENV" is not set: a restrictive base does not pass it (add it to that base\'s "inherit")' },
      { path: 'environment.set.TZ', message: '"TZ" is set to the base\'s value, which wins over this one' },
    ]);
  });

  it('says nothing when every name makes it, or the profile has no rule of its own', () => {
    const child = { inherit: ['PATH'], set: { NODE_ENV: 'production' } };
    expect(droppedEnvironment(child, narrow(profile(child), profile({ inherit: ['PATH', 'NODE_ENV'], set: {} })).environment)).toEqual([]);
    expect(droppedEnvironment(child, narrow(profile(child), profile(undefined)).environment)).toEqual([]);
    expect(droppedEnvironment(undefined, { inherit: [], set: {} })).toEqual([]);
  });
});

describe('narrowedByBases (review s24: check warned of environment names only)', () => {
  const grant = (path: string, mode: 'read-only' | 'read-write') => ({ sourcePath: path, targetPath: path, accessMode: mode });
  const process = (filesystemPaths: EffectiveProfile['filesystemPaths'], networkCapabilities: EffectiveProfile['networkCapabilities']): EffectiveProfile => ({
    filesystemPaths, networkCapabilities, environment: undefined, allowedToolCalls: undefined, restrictedToolCalls: [],
  });

  it('names a grant made read-only, one narrowed, one dropped, and network the base cuts', () => {
    const child = process([grant('/home/alice/project', 'read-write'), grant('/srv/data', 'read-only'), grant('/opt/tools', 'read-only')], ['internet-client']);
    const base = process([grant('/home/alice', 'read-only'), grant('/srv/data/public', 'read-only')], []);
    expect(narrowedByBases(child, narrow(child, base))).toEqual([
      { path: 'filesystem-paths', message: '"/home/alice/project" is read-only: a restrictive base grants it read-only (make that base\'s grant "read-write")' },
      { path: 'filesystem-paths', message: '"/srv/data" is narrowed to what a restrictive base grants of it: "/srv/data/public"' },
      { path: 'filesystem-paths', message: '"/opt/tools" is not granted: no restrictive base grants it (add it to that base\'s "filesystem-paths")' },
      { path: 'network-capabilities', message: '"internet-client" is cut to no network: a restrictive base allows no more (widen that base\'s "network-capabilities")' },
    ]);
  });

  it('says nothing when the base covers it all, or constrains no process', () => {
    const child = process([grant('/home/alice/project', 'read-write')], ['loopback']);
    expect(narrowedByBases(child, narrow(child, process([grant('/home/alice', 'read-write')], ['internet-client'])))).toEqual([]);
    expect(narrowedByBases(child, narrow(child, process([], undefined)))).toEqual([]);
  });
});
