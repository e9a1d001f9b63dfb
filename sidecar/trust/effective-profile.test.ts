import { describe, expect, it } from 'vitest';
import { composeProfile } from './compose.ts';
import { constrainsProcess, containedNetwork, effectiveFromFile, NEUTRAL_PROFILE } from './effective-profile.ts';
import { trustProfileFileSchema } from './profile-schema.ts';

const fromFile = (json: unknown) => effectiveFromFile(trustProfileFileSchema.parse(json));
const grant = { 'source-path': '/srv/project', 'access-mode': 'read-write' };

describe('a profile that grants paths and says nothing of the network', () => {
  it('is contained and gets no network, never the host one', () => {
    const effective = fromFile({ 'filesystem-paths': [grant] });
    expect(effective.networkCapabilities).toEqual([]);
    expect(constrainsProcess(effective)).toBe(true);
    expect(containedNetwork(effective)).toBe('none');
  });

  it('stays without network when a permissive base adds paths, and takes a network only from a base that lists one', () => {
    const own = fromFile({ 'filesystem-paths': [grant] });
    const paths = fromFile({ 'filesystem-paths': [{ 'source-path': '/srv/data', 'access-mode': 'read-only' }] });
    const internet = fromFile({ 'network-capabilities': ['internet-client'] });
    expect(composeProfile(own, [{ profile: paths, mode: 'permissive' }]).networkCapabilities).toEqual([]);
    expect(composeProfile(own, [{ profile: internet, mode: 'permissive' }]).networkCapabilities).toEqual(['internet-client']);
  });
});

describe('a profile that says nothing at all', () => {
  it('stays unconstrained: no paths and no network key is the neutral profile', () => {
    const effective = fromFile({ environment: { inherit: ['PATH'] } });
    expect(effective.networkCapabilities).toBeUndefined();
    expect(constrainsProcess(effective)).toBe(false);
  });
});

describe('containedNetwork', () => {
  it.each([
    [undefined, 'none'],
    [[], 'none'],
    [['loopback'], 'loopback'],
    [['internet-client'], 'internet-client'],
    [['loopback', 'internet-client'], 'internet-client'],
  ] as const)('%j → %s', (network, expected) => {
    expect(containedNetwork({ ...NEUTRAL_PROFILE, networkCapabilities: network })).toBe(expected);
  });
});
