import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { auditFromConfig } from '../../shared/audit/audit-from-config.ts';
import type { AuditRecord } from '../../shared/audit/audit-record.ts';
import { createLogger } from '../../shared/log.ts';
import { auditWriter } from './audit-writer.ts';

const record: AuditRecord = { event: 'call', agent: 'alice', server: 'everything', host: 'host-1', method: 'tools/call', tool: 'echo', decision: 'allowed', outcome: 'ok', durationMs: 1, era: 'legacy' };

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function audited(file: string) {
  const logged: Array<Record<string, unknown>> = [];
  const { audit } = auditFromConfig({ file }, { component: 'sidecar', write: auditWriter(file, 'info', 'sidecar.json'), log: createLogger({ level: 'debug', write: (line) => logged.push(JSON.parse(line)) }) });
  return { audit, logged };
}

describe('auditWriter to a file', () => {
  it('appends one line a record to a file it creates 0600', () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-writer-'));
    const file = join(dir, 'audit.jsonl');
    const { audit } = audited(file);
    audit.record(record);
    audit.record({ ...record, agent: 'bob' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').split('\n').map((l) => (l === '' ? l : JSON.parse(l).agent))).toEqual(['alice', 'bob', '']);
  });

  // /dev/full is Linux's; the writer is the same code elsewhere.
  it.skipIf(!existsSync('/dev/full'))('says on the log that lines are lost when the device is full, and the call goes on (review s22)', () => {
    const { audit, logged } = audited('/dev/full');
    expect(() => audit.record(record)).not.toThrow();
    expect(logged).toEqual([expect.objectContaining({ level: 'error', lost: 1, why: expect.stringContaining('ENOSPC') })]);
  });

  it('refuses a file it cannot open as a problem of the config naming it (review s22: the bare ENOENT named neither)', () => {
    expect(() => auditWriter('/nonexistent-dir/audit.jsonl', 'info', '/etc/switchyard/sidecar.json')).toThrow(
      expect.objectContaining({ name: 'LocalError', code: 'invalid-config', message: '/etc/switchyard/sidecar.json: audit.file: cannot open "/nonexistent-dir/audit.jsonl": ENOENT' }),
    );
  });
});
