import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/validation.ts';
import { DEFAULT_TMP_SIZE_MIB, loadSidecarConfig, parseSidecarConfig } from './sidecar-config.ts';

const base = { worker: 'http://127.0.0.1:8787', 'entity-id': 'alice-laptop' };
const dir = mkdtempSync(join(tmpdir(), 'sy-sandbox-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function issues(input: unknown): string[] {
  try {
    parseSidecarConfig(input);
  } catch (error) {
    if (error instanceof ValidationError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  return [];
}

describe('sidecar.json "sandbox"', () => {
  it('defaults the /tmp cap to 64 MiB and takes a configured one', () => {
    expect(DEFAULT_TMP_SIZE_MIB).toBe(64);
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify(base));
    expect(loadSidecarConfig(dir).sandbox).toEqual({ tmpSizeMib: 64 });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...base, sandbox: { 'tmp-size-mib': 16 } }));
    expect(loadSidecarConfig(dir).sandbox).toEqual({ tmpSizeMib: 16 });
  });

  it.each<[string, unknown, string]>([
    ['zero', { 'tmp-size-mib': 0 }, 'sandbox.tmp-size-mib: must be at least 1'],
    ['a fraction', { 'tmp-size-mib': 1.5 }, 'sandbox.tmp-size-mib: must be a whole number of MiB'],
    ['a string', { 'tmp-size-mib': '64' }, 'sandbox.tmp-size-mib:'],
    ['an unknown key', { 'tmp-size': 64 }, 'sandbox.tmp-size:'],
  ])('rejects %s', (_name, sandbox, expected) => {
    expect(issues({ ...base, sandbox }).join('\n')).toContain(expected);
  });
});
