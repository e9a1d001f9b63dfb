import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { createLogger, silentLogger } from '../log.ts';
import { SETTLE_MS } from '../config/file-stamp.ts';
import { MODERN_STAMP_AGE_MS } from '../host/server-config-cache.ts';
import { refusedForWantOfProfile, resolveEffectiveTrust } from './host-floor.ts';
import { policyRevision } from './policy-revision.ts';
import { TrustProfileStore } from './profile-store.ts';

let dir: string;
let store: TrustProfileStore;
const write = (ref: string, content: unknown) => writeFileSync(join(dir, `${ref}.json`), JSON.stringify(content));
const revisionOf = async (ref: string) => (await store.load(ref)).revision;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sy-floor-'));
  store = new TrustProfileStore(dir);
  write('floor', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }], 'network-capabilities': [] });
  write('server-floor', { 'network-capabilities': ['loopback'] });
  write('agent', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-only' }, { 'source-path': '/home', 'access-mode': 'read-write' }] });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('resolveEffectiveTrust', () => {
  it('gives the floor to a request that names no profile', async () => {
    const trust = await resolveEffectiveTrust(store, { floor: 'floor' }, { server: 's' }, silentLogger);
    expect(trust).toMatchObject({ floor: 'floor', requested: null, revision: await revisionOf('floor') });
    expect(trust!.effective.networkCapabilities).toEqual([]);
  });

  it('composes an agent profile under the floor, with the revision of the composed policy', async () => {
    const requested = { ref: 'agent', revision: await revisionOf('agent') };
    const trust = (await resolveEffectiveTrust(store, { floor: 'floor' }, { server: 's', requested }, silentLogger))!;
    expect(trust.effective.filesystemPaths.map((g) => [g.sourcePath, g.accessMode])).toEqual([['/srv', 'read-only']]);
    expect(trust.effective.networkCapabilities).toEqual([]);
    expect(trust.revision).toBe(policyRevision(trust.effective));
    expect([await revisionOf('floor'), requested.revision]).not.toContain(trust.revision);
    const other = (await resolveEffectiveTrust(store, { floor: 'server-floor' }, { server: 's', requested }, silentLogger))!;
    expect(other.revision).not.toBe(trust.revision);
  });

  it('composes an agent profile under a floor once per pair of resolved profiles, afresh after an edit of either', async () => {
    let clock = Date.now() + SETTLE_MS + 1000;
    const settled = new TrustProfileStore(dir, undefined, () => clock);
    const requested = { ref: 'agent', revision: (await settled.load('agent')).revision };
    const open = async (stampAgeMs = 0) => (await resolveEffectiveTrust(settled, { floor: 'floor' }, { server: 's', requested, stampAgeMs }, silentLogger))!;
    const first = await open();
    expect((await open()).effective).toBe(first.effective);
    write('floor', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }, { 'source-path': '/home', 'access-mode': 'read-only' }], 'network-capabilities': [] });
    clock += 1;
    // A modern request relies on the check a moment ago; a legacy open stats, and sees the edit.
    expect((await open(MODERN_STAMP_AGE_MS)).revision).toBe(first.revision);
    const edited = await open();
    expect(edited.revision).not.toBe(first.revision);
    expect(edited.effective.filesystemPaths.map((g) => [g.sourcePath, g.accessMode])).toEqual([['/home', 'read-only'], ['/srv', 'read-only']]);
    expect(edited.revision).toBe(policyRevision(edited.effective));
    expect((await open(MODERN_STAMP_AGE_MS)).effective).toBe(edited.effective);
  });

  it('lets a server entry\'s floor win over the host\'s', async () => {
    const trust = await resolveEffectiveTrust(store, { floor: 'floor' }, { server: 's', serverFloor: 'server-floor' }, silentLogger);
    expect(trust).toMatchObject({ floor: 'server-floor', revision: await revisionOf('server-floor') });
  });

  it('refuses neither-floor-nor-profile unless uncontained launches are allowed', async () => {
    await expect(resolveEffectiveTrust(store, {}, { server: 's' }, silentLogger)).rejects.toMatchObject({ reason: 'denied-by-policy', detail: { server: 's' } });
    await expect(resolveEffectiveTrust(store, { allowUncontained: false }, { server: 's' }, silentLogger)).rejects.toBeInstanceOf(WireError);
    expect(await resolveEffectiveTrust(store, { allowUncontained: true }, { server: 's' }, silentLogger)).toBeNull();
    // An agent profile alone is used as it is; allow-uncontained does not weaken it.
    const alone = await resolveEffectiveTrust(store, { allowUncontained: true }, { server: 's', requested: { ref: 'agent', revision: await revisionOf('agent') } }, silentLogger);
    expect(alone).toMatchObject({ floor: null, requested: 'agent', revision: await revisionOf('agent') });
  });

  it('tells without a launch, as check and doctor ask it, exactly which launches it refuses for want of any profile', async () => {
    const requested = { ref: 'agent', revision: await revisionOf('agent') };
    for (const host of [{}, { allowUncontained: false }, { allowUncontained: true }, { floor: 'floor' }, { floor: 'floor', allowUncontained: true }]) {
      for (const request of [{ server: 's' }, { server: 's', serverFloor: 'server-floor' }, { server: 's', requested }, { server: 's', serverFloor: 'server-floor', requested }]) {
        const refused = await resolveEffectiveTrust(store, host, request, silentLogger).then(
          () => false,
          (error: unknown) => error instanceof WireError && error.reason === 'denied-by-policy',
        );
        expect(refusedForWantOfProfile(host, request), JSON.stringify({ host, request })).toBe(refused);
      }
    }
    expect(refusedForWantOfProfile({}, {})).toBe(true);
    expect(refusedForWantOfProfile({ allowUncontained: true }, {})).toBe(false);
  });

  it('refuses a stale agent revision without either revision in the error, and logs both at warn', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) });
    const stale = `sha256:${'1'.repeat(64)}`;
    const error = (await resolveEffectiveTrust(store, { floor: 'floor' }, { server: 's', requested: { ref: 'agent', revision: stale } }, log).catch((e: unknown) => e)) as WireError;
    expect(error.reason).toBe('trust-profile-stale');
    expect(JSON.stringify({ m: error.message, d: error.detail })).not.toMatch(/sha256:/);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', ref: 'agent', expected: stale, current: await revisionOf('agent') }));
  });

  it('fails closed with launch-failed when the floor cannot be loaded, and passes the agent profile\'s own refusals on', async () => {
    await expect(resolveEffectiveTrust(store, { floor: 'missing', allowUncontained: true }, { server: 's' }, silentLogger)).rejects.toMatchObject({ reason: 'launch-failed' });
    write('broken', { 'network-capabilities': 'everything' });
    await expect(resolveEffectiveTrust(store, { floor: 'broken' }, { server: 's' }, silentLogger)).rejects.toMatchObject({ reason: 'launch-failed' });
    await expect(resolveEffectiveTrust(store, { floor: 'floor' }, { server: 's', requested: { ref: 'nope', revision: `sha256:${'0'.repeat(64)}` } }, silentLogger)).rejects.toMatchObject({ reason: 'trust-profile-not-found' });
  });
});
