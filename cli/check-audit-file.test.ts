import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { auditFileIssues } from './check-audit-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-audit-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('auditFileIssues', () => {
  it('passes a file that is there or can be created, absolute or relative to the config', () => {
    writeFileSync(join(dir, 'there.jsonl'), '');
    expect(auditFileIssues('there.jsonl', dir)).toEqual([]);
    expect(auditFileIssues('new.jsonl', dir)).toEqual([]);
    expect(auditFileIssues(join(dir, 'new.jsonl'), '/elsewhere')).toEqual([]);
  });

  it('names the folder a start could not create the file in, resolved as the start resolves it (review s25)', () => {
    expect(auditFileIssues('logs/audit.jsonl', dir)).toEqual([
      { path: 'audit.file', message: `the folder "${join(dir, 'logs')}" does not exist, so the start would refuse to open "${join(dir, 'logs', 'audit.jsonl')}": create the folder` },
    ]);
    writeFileSync(join(dir, 'plain'), '');
    expect(auditFileIssues('plain/audit.jsonl', dir)).toEqual([{ path: 'audit.file', message: `"${join(dir, 'plain')}" is not a folder, so the start would refuse to open "${join(dir, 'plain', 'audit.jsonl')}"` }]);
    mkdirSync(join(dir, 'a-folder'));
    expect(auditFileIssues('a-folder', dir)).toEqual([{ path: 'audit.file', message: `"${join(dir, 'a-folder')}" is a folder: name a file in it` }]);
  });
});
