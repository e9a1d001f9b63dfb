import { describe, expect, it } from 'vitest';
import { narrow } from '../sidecar/trust/compose.ts';
import type { EffectiveProfile } from '../sidecar/trust/effective-profile.ts';
import { droppedEnvironment } from './check-profile-environment.ts';

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
