import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../shared/audit/audit-log.ts';
import { WireError } from '../../shared/errors.ts';
import { auditWriter } from './audit-writer.ts';
import { SidecarAudit } from './sidecar-audit.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function audit() {
  const lines: Array<Record<string, any>> = [];
  return { lines, audit: new SidecarAudit(new AuditLog({ component: 'sidecar', write: (line) => lines.push(JSON.parse(line)) }), 'laptop') };
}

describe('SidecarAudit', () => {
  it('puts every refused channel open on the record at warn, with the agent, the reason and the worker\'s trace, then rethrows it', async () => {
    const { lines, audit: sidecar } = audit();
    const refuse = sidecar.audited(async () => {
      throw new WireError('trust-profile-stale', 'Trust profile "workspace" changed');
    });
    const request = { type: 'mcp', connection: { 'server-name': 'files', agent: 'alice', traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01' } };
    await expect(refuse(request, null)).rejects.toMatchObject({ reason: 'trust-profile-stale' });
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', event: 'open', agent: 'alice', server: 'files', host: 'laptop', decision: 'refused', reason: 'trust-profile-stale', traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: '00f067aa0ba902b7' })]);
  });

  it('reads a malformed request loosely and records an unexpected failure as launch-failed', async () => {
    const { lines, audit: sidecar } = audit();
    await expect(sidecar.audited(async () => { throw new TypeError('boom'); })({ connection: { 'server-name': 42 } }, null)).rejects.toThrow('boom');
    expect(lines[0]).toMatchObject({ agent: null, server: null, reason: 'launch-failed', parentSpanId: null });
  });

  it('joins the channel request\'s trace for calls that carry none of their own', () => {
    const { lines, audit: sidecar } = audit();
    const ledger = sidecar.ledger({ 'server-name': 'files', agent: 'alice', era: 'modern', traceparent: '00-11111111111111111111111111111111-2222222222222222-01' });
    ledger.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read' } });
    ledger.answer({ id: 1, result: {} });
    expect(lines[0]).toMatchObject({ era: 'modern', host: 'laptop', traceId: '11111111111111111111111111111111', parentSpanId: '2222222222222222' });
  });
});

describe('auditWriter', () => {
  it('appends every line to the file, created 0600, whatever the log level', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-audit-'));
    dirs.push(dir);
    const file = join(dir, 'audit.jsonl');
    const write = auditWriter(file, 'error', 'sidecar.json');
    write('{"a":1}', 'info');
    write('{"b":2}', 'warn');
    auditWriter(file, 'info', 'sidecar.json')('{"c":3}', 'info');
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}\n{"b":2}\n{"c":3}\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
