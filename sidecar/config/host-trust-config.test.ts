import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadHostTrustConfig, loadSidecarConfig, parseSidecarConfig } from './sidecar-config.ts';

const base = { worker: 'http://127.0.0.1:8787', 'entity-id': 'alice-laptop' };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function dirWith(sidecarJson?: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'sy-host-trust-'));
  dirs.push(dir);
  if (sidecarJson !== undefined) writeFileSync(join(dir, 'sidecar.json'), JSON.stringify(sidecarJson));
  return dir;
}

describe('sidecar.json host trust keys', () => {
  it('takes a "trust-profile" floor and "allow-uncontained", checking both', () => {
    expect(parseSidecarConfig({ ...base, 'trust-profile': 'workspace', 'allow-uncontained': false })).toMatchObject({ 'trust-profile': 'workspace', 'allow-uncontained': false });
    expect(() => parseSidecarConfig({ ...base, 'trust-profile': '../etc' })).toThrow(/trust-profile: must be 1-64 letters/);
    expect(() => parseSidecarConfig({ ...base, 'allow-uncontained': 'yes' })).toThrow(/allow-uncontained: /);
  });

  it('loads them with the rest of the config: no floor and no uncontained launches unless it says so', () => {
    expect(loadSidecarConfig(dirWith(base))).toMatchObject({ allowUncontained: false });
    expect(loadSidecarConfig(dirWith(base)).trustFloor).toBeUndefined();
    expect(loadSidecarConfig(dirWith({ ...base, 'trust-profile': 'workspace', 'allow-uncontained': true }))).toMatchObject({ trustFloor: 'workspace', allowUncontained: true });
  });

  it('reads only those keys for a host without a link (single-machine mode), from a file that may be absent', () => {
    expect(loadHostTrustConfig(dirWith())).toEqual({ allowUncontained: false });
    expect(loadHostTrustConfig(dirWith({ 'trust-profile': 'floor' }))).toEqual({ trustFloor: 'floor', allowUncontained: false });
    expect(loadHostTrustConfig(dirWith({ ...base, 'allow-uncontained': true }))).toEqual({ allowUncontained: true });
    expect(() => loadHostTrustConfig(dirWith({ 'trust-profile': 'a/b' }))).toThrow(/trust-profile: must be 1-64 letters/);
  });

  it('refuses a key of no sidecar.json there, so a misspelt floor is said rather than dropped (review s22)', () => {
    expect(() => loadHostTrustConfig(dirWith({ 'trust-profle': 'ro', 'allow-uncontained': true }))).toThrow('trust-profle: unknown key (did you mean "trust-profile"?)');
  });
});
