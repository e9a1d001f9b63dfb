import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalError, WireError } from '../../shared/errors.ts';
import { ValidationError } from '../../shared/validation.ts';
import { SETTLE_MS } from '../config/file-stamp.ts';
import { MODERN_STAMP_AGE_MS } from '../host/server-config-cache.ts';
import { TrustProfileStore } from './profile-store.ts';

let dir: string;
let store: TrustProfileStore;

function write(ref: string, content: unknown): void {
  writeFileSync(join(dir, `${ref}.json`), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sy-profiles-'));
  store = new TrustProfileStore(dir);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('TrustProfileStore', () => {
  it('resolves a profile with its sha256 revision', async () => {
    write('workspace', { 'filesystem-paths': [{ 'source-path': '/srv/project', 'access-mode': 'read-write' }], 'network-capabilities': [] });
    const { revision } = await store.load('workspace');
    expect(revision).toMatch(/^sha256:[0-9a-f]{64}$/);
    const resolved = await store.resolve('workspace', revision);
    expect(resolved.effective.filesystemPaths).toEqual([{ sourcePath: '/srv/project', targetPath: '/srv/project', accessMode: 'read-write' }]);
    expect(resolved.effective.networkCapabilities).toEqual([]);
  });

  it('rejects a missing profile with trust-profile-not-found', async () => {
    const error = await failure(store.resolve('nope', 'sha256:00'));
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('trust-profile-not-found');
    expect((error as WireError).message).toContain('"nope"');
  });

  it('rejects a changed revision with trust-profile-stale naming the fix but neither revision; the revisions go to onStale only', async () => {
    write('workspace', { 'network-capabilities': [] });
    const { revision: old } = await store.load('workspace');
    write('workspace', { 'network-capabilities': ['loopback'] });
    const told: unknown[] = [];
    const error = (await failure(store.resolve('workspace', old, (revisions) => told.push(revisions)))) as WireError;
    const { revision: current } = await store.load('workspace');
    expect(error.reason).toBe('trust-profile-stale');
    expect(error.message).toContain('run `sidecar host-entry`');
    const wire = JSON.stringify({ message: error.message, detail: error.detail, body: error.toJsonRpcError() });
    expect(wire).not.toContain(current);
    expect(wire).not.toContain(old);
    expect(wire).not.toMatch(/sha256:/);
    expect(told).toEqual([{ expected: old, current }]);
  });

  it('rejects a reference that could leave the folder before touching the disk', async () => {
    const error = (await failure(store.resolve('../etc/passwd', 'sha256:00'))) as WireError;
    expect(error.reason).toBe('invalid-request');
  });

  it('rejects a reference holding "..", as the worker and the link request do', async () => {
    const error = (await failure(store.load('work..space'))) as WireError;
    expect(error.reason).toBe('invalid-request');
    expect(error.message).toBe('Invalid trust profile reference: must not contain ".."');
  });

  it('names a missing base', async () => {
    write('child', { 'base-trust-profiles': ['ghost'] });
    const error = (await failure(store.load('child'))) as WireError;
    expect(error.reason).toBe('trust-profile-not-found');
    expect(error.message).toContain('"ghost", a base of "child"');
  });

  it.each<[string, Record<string, string[]>, string]>([
    ['a two-profile cycle', { a: ['b'], b: ['a'] }, '"a" → "b" → "a"'],
    ['a self reference', { a: ['a'] }, '"a" → "a"'],
    ['a cycle below the root', { root: ['a'], a: ['b'], b: ['a'] }, '"a" → "b" → "a"'],
  ])('detects %s and names it', async (_name, graph, cycle) => {
    for (const [ref, bases] of Object.entries(graph)) write(ref, { 'base-trust-profiles': bases });
    const error = (await failure(store.load(Object.keys(graph)[0]!))) as LocalError;
    expect(error).toBeInstanceOf(LocalError);
    expect(error.code).toBe('trust-profile-invalid');
    expect(error.message).toContain(cycle);
  });

  it('changes the revision when a base of a base changes, not when a file is reformatted', async () => {
    write('top', { 'base-trust-profiles': ['mid'] });
    write('mid', { 'base-trust-profiles': ['low'] });
    write('low', { 'network-capabilities': [], 'filesystem-paths': [{ 'source-path': '/a', 'access-mode': 'read-only' }] });
    const first = (await store.load('top')).revision;
    writeFileSync(join(dir, 'low.json'), '{"filesystem-paths":[{"access-mode":"read-only","source-path":"/a"}],\n\n  "network-capabilities":[]}');
    expect((await store.load('top')).revision).toBe(first);
    write('low', { 'network-capabilities': ['loopback'], 'filesystem-paths': [{ 'source-path': '/a', 'access-mode': 'read-only' }] });
    expect((await store.load('top')).revision).not.toBe(first);
  });

  it('keeps the revision of every profile built on a base when only the base\'s description changes', async () => {
    write('base', { description: 'Org base', 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }], 'network-capabilities': [] });
    write('workspace', { description: 'Project', 'base-trust-profiles': ['base'], 'filesystem-paths': [{ 'source-path': '/srv/app', 'access-mode': 'read-write' }] });
    const before = [(await store.load('base')).revision, (await store.load('workspace')).revision];
    write('base', { description: 'Org base, reviewed 2026-11', 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }], 'network-capabilities': [] });
    write('workspace', { 'base-trust-profiles': ['base'], 'filesystem-paths': [{ 'source-path': '/srv/app', 'access-mode': 'read-write' }] });
    expect([(await store.load('base')).revision, (await store.load('workspace')).revision]).toEqual(before);
  });

  it('keeps the revision when a base changes in a way the composition absorbs, and changes it when the effective policy changes', async () => {
    write('base', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }], 'network-capabilities': ['internet-client'] });
    write('workspace', { 'base-trust-profiles': ['base'], 'filesystem-paths': [{ 'source-path': '/srv/app', 'access-mode': 'read-write' }], 'network-capabilities': [] });
    const first = (await store.load('workspace')).revision;
    // A second base grant outside the child's paths, and a wider base network: the child's own terms still decide.
    write('base', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }, { 'source-path': '/opt', 'access-mode': 'read-only' }], 'network-capabilities': ['internet-client'] });
    expect((await store.load('workspace')).revision).toBe(first);
    write('base', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-only' }], 'network-capabilities': ['internet-client'] });
    expect((await store.load('workspace')).revision).not.toBe(first);
  });

  it('gives two names with the same effective policy the same revision: the revision covers the policy, not the name', async () => {
    write('a', { 'network-capabilities': [], description: 'A' });
    write('b', { 'network-capabilities': [] });
    write('c', { 'base-trust-profiles': ['b'], 'network-capabilities': [] });
    expect((await store.load('a')).revision).toBe((await store.load('b')).revision);
    expect((await store.load('c')).revision).toBe((await store.load('b')).revision);
  });

  it('ignores the order of inherited variable names and of keys, not of tool-call schemas (deny messages number them)', async () => {
    write('p', { environment: { inherit: ['PATH', 'LANG'], set: { A: '1', B: '2' } } });
    const first = (await store.load('p')).revision;
    write('p', { environment: { set: { B: '2', A: '1' }, inherit: ['LANG', 'PATH', 'LANG'] } });
    expect((await store.load('p')).revision).toBe(first);
    const one = { properties: { toolName: { const: 'one' } } };
    const two = { properties: { toolName: { const: 'two' } } };
    write('q', { 'restricted-mcp-tool-call-schemas': [one, two] });
    const ordered = (await store.load('q')).revision;
    write('q', { 'restricted-mcp-tool-call-schemas': [two, one] });
    expect((await store.load('q')).revision).not.toBe(ordered);
  });

  it.each<[string, Record<string, unknown>]>([
    ['an access mode', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-only' }] }],
    ['a target path', { 'filesystem-paths': [{ 'source-path': '/srv', 'target-path': '/work', 'access-mode': 'read-write' }] }],
    ['a path', { 'filesystem-paths': [{ 'source-path': '/srv/x', 'access-mode': 'read-write' }] }],
    ['the network', { 'network-capabilities': ['loopback'] }],
    ['an inherited variable', { environment: { inherit: ['PATH', 'HOME'], set: { NODE_ENV: 'production' } } }],
    ['a set value', { environment: { inherit: ['PATH'], set: { NODE_ENV: 'development' } } }],
    ['an allowed tool-call schema', { 'allowed-mcp-tool-call-schemas': [{ properties: { toolName: { const: 'read' } } }] }],
    ['a restricted tool-call schema', { 'restricted-mcp-tool-call-schemas': [{ properties: { toolName: { const: 'write' } } }] }],
  ])('changes the revision when %s changes', async (_what, change) => {
    const original = {
      'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH'], set: { NODE_ENV: 'production' } },
    };
    write('p', original);
    const first = (await store.load('p')).revision;
    write('p', { ...original, ...change });
    expect((await store.load('p')).revision).not.toBe(first);
  });

  it('composes nested bases with mixed modes', async () => {
    write('org', { 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }], 'network-capabilities': ['loopback'] });
    write('tools', { 'filesystem-paths': [{ 'source-path': '/opt/tools', 'access-mode': 'read-only' }], 'network-capabilities': [] });
    write('team', { 'base-trust-profiles': [{ profile: 'tools', 'inheritance-mode': 'permissive' }, 'org'], 'filesystem-paths': [{ 'source-path': '/srv/team', 'access-mode': 'read-write' }], 'network-capabilities': ['internet-client'] });
    write('workspace', { 'base-trust-profiles': ['team'], 'filesystem-paths': [{ 'source-path': '/srv/team/app', 'access-mode': 'read-write' }, { 'source-path': '/opt/tools', 'access-mode': 'read-only' }], 'network-capabilities': ['internet-client'] });
    const { effective } = await store.load('workspace');
    // team = (own ∨ tools) ∧ org: /opt/tools is outside org's /srv, so the restrictive base drops it.
    expect(effective.filesystemPaths).toEqual([{ sourcePath: '/srv/team/app', targetPath: '/srv/team/app', accessMode: 'read-write' }]);
    expect(effective.networkCapabilities).toEqual(['loopback']);
  });

  it('reads files fresh on every resolve', async () => {
    write('p', { 'network-capabilities': [] });
    expect((await store.load('p')).effective.networkCapabilities).toEqual([]);
    write('p', { 'network-capabilities': ['internet-client'] });
    expect((await store.load('p')).effective.networkCapabilities).toEqual(['internet-client']);
  });

  it('reuses a resolved profile while no file of its closure changed, and reads again after an edit of any', async () => {
    const settled = new TrustProfileStore(dir, undefined, () => Date.now() + SETTLE_MS + 1000);
    write('base', { 'network-capabilities': [] });
    write('p', { 'base-trust-profiles': [{ profile: 'base', 'inheritance-mode': 'restrictive' }] });
    const first = await settled.load('p');
    expect(await settled.load('p')).toBe(first);
    write('base', { 'network-capabilities': ['internet-client'], description: 'edited' });
    const second = await settled.load('p');
    expect(second).not.toBe(first);
    expect(await settled.load('p')).toBe(second);
    rmSync(join(dir, 'base.json'));
    await expect(settled.load('p')).rejects.toMatchObject({ reason: 'trust-profile-not-found' });
  });

  it('relies on a check of the stamps as recent as a modern request allows, and never serves an edit it has seen the old way', async () => {
    let clock = Date.now() + SETTLE_MS + 1000;
    const windowed = new TrustProfileStore(dir, undefined, () => clock);
    const modern = async () => (await windowed.load('p', MODERN_STAMP_AGE_MS)).effective.networkCapabilities;
    write('p', { 'network-capabilities': [] });
    expect(await modern()).toEqual([]);
    write('p', { 'network-capabilities': ['loopback'] });
    clock += MODERN_STAMP_AGE_MS - 1;
    expect(await modern()).toEqual([]); // the check a moment ago stands
    clock += 1;
    expect(await modern()).toEqual(['loopback']);
    write('p', { 'network-capabilities': ['internet-client'] });
    expect((await windowed.load('p')).effective.networkCapabilities).toEqual(['internet-client']); // a legacy open stats at once
    expect(await modern()).toEqual(['internet-client']);
    write('p', { 'network-capabilities': ['internet'] }); // invalid: seen, refused, and the old profile not served after
    await expect(windowed.load('p')).rejects.toThrow(ValidationError);
    await expect(windowed.load('p', MODERN_STAMP_AGE_MS)).rejects.toThrow(ValidationError);
    await expect(windowed.resolve('p', 'sha256:any', undefined, MODERN_STAMP_AGE_MS)).rejects.toThrow(ValidationError);
  });

  it('checks the files again when the clock stepped back since the last check: a step back never stretches the window', async () => {
    let clock = Date.now() + SETTLE_MS + 1000;
    const windowed = new TrustProfileStore(dir, undefined, () => clock);
    const modern = async () => (await windowed.load('p', MODERN_STAMP_AGE_MS)).effective.networkCapabilities;
    write('p', { 'network-capabilities': [] });
    expect(await modern()).toEqual([]);
    write('p', { 'network-capabilities': ['loopback'] });
    clock -= 3_600_000; // an hour back; the file's stamp is then ahead of the clock, so not settled either
    expect(await modern()).toEqual(['loopback']);
  });

  it('keeps no read that ended after a newer one: an older read ending last does not put back the old profile', async () => {
    const clock = Date.now() + SETTLE_MS + 1000;
    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holdNext = true;
    const read = async (path: string) => {
      const text = readFileSync(path, 'utf8');
      if (holdNext) {
        holdNext = false;
        await held;
      }
      return text;
    };
    const racing = new TrustProfileStore(dir, read, () => clock);
    write('p', { 'network-capabilities': [] });
    const older = racing.load('p');
    write('p', { 'network-capabilities': ['loopback'] });
    expect((await racing.load('p')).effective.networkCapabilities).toEqual(['loopback']);
    release!();
    expect((await older).effective.networkCapabilities).toEqual([]);
    expect((await racing.load('p', MODERN_STAMP_AGE_MS)).effective.networkCapabilities).toEqual(['loopback']);
  });

  it('sees an edit of the same size made right after a resolve', async () => {
    write('p', { 'network-capabilities': ['loopback'] });
    expect((await store.load('p')).effective.networkCapabilities).toEqual(['loopback']);
    write('p', { 'network-capabilities': ['internet'] });
    await expect(store.load('p')).rejects.toThrow(ValidationError);
  });

  it('reports an invalid file as path: message without quoting its content', async () => {
    write('bad', { 'filesystem-paths': [{ 'source-path': 'rel', 'access-mode': 'read-only' }], extra: true });
    const error = (await failure(store.load('bad'))) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.issues).toEqual([
      { path: 'filesystem-paths[0].source-path', message: 'must be an absolute path' },
      { path: 'extra', message: 'unknown key' },
    ]);
    write('broken', '{"environment": SECRET_VALUE');
    const broken = (await failure(store.load('broken'))) as ValidationError;
    expect(broken.issues[0]?.message).toMatch(/^not valid JSON/);
    expect(broken.message).not.toContain('SECRET_VALUE');
    write('multiline', '{\n  "description": "x",\n  oops\n}');
    expect(((await failure(store.load('multiline'))) as ValidationError).issues[0]?.message).toBe('not valid JSON: Expected double-quoted property name in JSON at position 26 (line 3 column 3)');
    // A grant given twice would leave only the last, perhaps the wider one, in force.
    write('twice', '{"filesystem-paths": [{"source-path": "/w", "access-mode": "read-only", "access-mode": "read-write"}]}');
    expect(((await failure(store.load('twice'))) as ValidationError).issues).toEqual([
      { path: 'filesystem-paths[0].access-mode', message: 'defined twice (line 1 and line 1): JSON keeps only the last, so remove one' },
    ]);
  });

  it('lists profiles with revisions, and unusable ones with their error', async () => {
    write('b', { 'network-capabilities': [], description: 'Bee' });
    write('a', { 'base-trust-profiles': ['missing'] });
    writeFileSync(join(dir, 'notes.txt'), 'ignored');
    const listing = await store.list();
    expect(listing.map((l) => l.ref)).toEqual(['a', 'b']);
    expect(listing[0]).toMatchObject({ ref: 'a', error: expect.stringContaining('"missing"') });
    expect(listing[1]).toEqual({ ref: 'b', revision: (await store.load('b')).revision, description: 'Bee' });
    expect(await new TrustProfileStore(join(dir, 'absent')).list()).toEqual([]);
  });
});
