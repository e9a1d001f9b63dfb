import { describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import { silentLogger } from '../../log.ts';
import { type EffectiveProfile, type FilesystemGrant, NEUTRAL_PROFILE, type NetworkCapability } from '../../trust/effective-profile.ts';
import { sbplString, seatbeltPolicy, seatbeltProfile } from './seatbelt.ts';

function grant(sourcePath: string, accessMode: FilesystemGrant['accessMode'], targetPath = sourcePath): FilesystemGrant {
  return { sourcePath, targetPath, accessMode };
}

function profile(grants: FilesystemGrant[], network: NetworkCapability[] | undefined): EffectiveProfile {
  return { ...NEUTRAL_PROFILE, filesystemPaths: grants, networkCapabilities: network };
}

function text(effective: EffectiveProfile, readPaths: string[] = []): string {
  return seatbeltProfile({ effective, readPaths, revision: 'sha256:abc' });
}

describe('seatbeltProfile', () => {
  it('denies by default and reads only the system besides what is listed', () => {
    const sbpl = text(profile([], []), ['/opt/node']);
    expect(sbpl.startsWith('(version 1)\n(deny default)\n; Switchyard trust profile sha256:abc\n')).toBe(true);
    expect(sbpl).toContain('(allow file-read* (subpath "/usr") (subpath "/bin") (subpath "/sbin") (subpath "/System")');
    expect(sbpl).toContain('(allow file-read* (subpath "/opt/node"))');
    expect(sbpl).not.toMatch(/\(allow file-write\* \(subpath/);
    expect(sbpl).not.toContain('network');
  });

  it('emits grants shallowest first, allowing or denying writes', () => {
    const sbpl = text(profile([grant('/srv/a/ro', 'read-only'), grant('/srv/a', 'read-write')], []));
    const lines = sbpl.split('\n').filter((l) => l.includes('/srv/'));
    expect(lines).toEqual([
      '(allow file-read* (subpath "/srv/a"))',
      '(allow file-write* (subpath "/srv/a"))',
      '(allow file-read* (subpath "/srv/a/ro"))',
      '(deny file-write* (subpath "/srv/a/ro"))',
    ]);
  });

  it.each<[string, NetworkCapability[] | undefined, string[], string[]]>([
    ['no network', [], [], ['network']],
    ['internet-client, never to localhost', ['internet-client'], ['(allow system-socket)', '(allow network-outbound)\n(deny network-outbound (remote ip "localhost:*"))'], ['(allow network*)']],
    ['a profile that grants paths and says nothing of the network', undefined, [], ['network']],
  ])('writes network rules for %s', (_name, network, present, absent) => {
    const sbpl = text(profile([grant('/srv', 'read-only')], network));
    for (const rule of present) expect(sbpl).toContain(rule);
    for (const rule of absent) expect(sbpl).not.toContain(rule);
  });

  it.each<[string, EffectiveProfile]>([
    ['loopback, which Seatbelt cannot keep off host services', profile([], ['loopback'])],
    ['a remapped grant, which Seatbelt cannot remap', profile([grant('/srv', 'read-only', '/mnt')], [])],
  ])('fails closed on %s', (_name, effective) => {
    let error: unknown;
    try {
      text(effective);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).reason).toBe('containment-unavailable');
  });

  it('escapes quotes and backslashes in paths', () => {
    expect(sbplString('/a "b"\\c')).toBe('"/a \\"b\\"\\\\c"');
    expect(text(profile([grant('/x"y', 'read-only')], []))).toContain('(subpath "/x\\"y")');
  });

  it('builds a policy with the exact environment', () => {
    const policy = seatbeltPolicy({
      effective: { ...profile([grant('/srv', 'read-write')], []), environment: { inherit: ['LANG'], set: {} } },
      launch: { file: '/usr/bin/true', args: [], env: { A: '1' } },
      executable: '/usr/bin/sandbox-exec',
      revision: 'sha256:abc',
      home: '/Users/alice',
      sidecarEnv: { LANG: 'C', SECRET: 's' },
      tmpSizeBytes: 64 * 1024 * 1024,
      log: silentLogger,
    });
    expect(policy).toMatchObject({ backend: 'seatbelt', executable: '/usr/bin/sandbox-exec', cwd: '/', env: { LANG: 'C', A: '1', HOME: '/tmp' } });
    expect(policy.profile).toContain('(allow file-write* (subpath "/srv"))');
  });
});
