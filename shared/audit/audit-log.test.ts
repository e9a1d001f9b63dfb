import { afterEach, describe, expect, it, vi } from 'vitest';
import { AuditLog, isoTime, wallClockMs, type AuditLevel } from './audit-log.ts';
import { createLogger } from '../log.ts';
import type { AuditRecord } from './audit-record.ts';

const record: AuditRecord = {
  event: 'call',
  agent: 'agent "quoted"',
  server: 'everything',
  host: 'host-1',
  method: 'tools/call',
  tool: 'echo',
  decision: 'allowed',
  outcome: 'ok',
  durationMs: 1.23456,
  era: 'legacy',
  session: 's-1',
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  parentSpanId: null,
};

function linesOf(fields?: Record<string, unknown>): Array<{ line: string; level: AuditLevel }> {
  const lines: Array<{ line: string; level: AuditLevel }> = [];
  const log = new AuditLog({ component: 'sidecar', write: (line, level) => lines.push({ line, level }), now: () => 0, ...(fields !== undefined ? { fields } : {}) });
  log.record(record, Date.UTC(2026, 11, 1, 19, 46, 7, 5));
  log.record({ ...record, decision: 'refused', outcome: 'error', reason: 'trust-profile-stale', durationMs: 0, tool: undefined }, Date.UTC(2026, 11, 1, 19, 46, 8, 120));
  return lines;
}

describe('AuditLog lines', () => {
  it('are the record after time, level, msg, component and the fields, in that order, the duration rounded in its place', () => {
    expect(linesOf()).toEqual(linesOf({})); // without fields: put together from pieces
    const plain = linesOf()[0]!.line;
    expect(plain).toBe(JSON.stringify({ time: '2026-12-01T19:46:07.006Z', level: 'info', msg: 'audit', component: 'sidecar', ...record, durationMs: 1.23 }));
    const [allowed, refused] = linesOf({ 'entity-id': 'host-1' });
    expect(allowed!.level).toBe('info');
    expect(allowed!.line).toBe(
      JSON.stringify({ time: '2026-12-01T19:46:07.006Z', level: 'info', msg: 'audit', component: 'sidecar', 'entity-id': 'host-1', ...record, durationMs: 1.23 }),
    );
    expect(Object.keys(JSON.parse(allowed!.line))).toEqual(['time', 'level', 'msg', 'component', 'entity-id', ...Object.keys(record)]);
    expect(refused!.level).toBe('warn');
    const { tool: _tool, ...untooled } = record;
    expect(refused!.line).toBe(
      JSON.stringify({ time: '2026-12-01T19:46:08.120Z', level: 'warn', msg: 'audit', component: 'sidecar', 'entity-id': 'host-1', ...untooled, decision: 'refused', outcome: 'error', reason: 'trust-profile-stale', durationMs: 0 }),
    );
  });

  it('let a field that repeats a key of the line be overwritten in place, as one object of them all would', () => {
    const [line] = linesOf({ component: 'overridden', agent: 'field-agent', extra: 1 });
    expect(line!.line).toBe(JSON.stringify(Object.assign({ time: '2026-12-01T19:46:07.006Z', level: 'info', msg: 'audit', component: 'sidecar' }, { component: 'overridden', agent: 'field-agent', extra: 1 }, record, { durationMs: 1.23 })));
  });
});

describe('isoTime', () => {
  it('is toISOString of the same time value, across seconds, before 1970 and with fractions', () => {
    const base = Date.UTC(2026, 11, 1, 23, 59, 59, 0);
    const times = [base, base + 7, base + 42, base + 999, base + 999.9, base + 1000, base + 1000.5, base + 86_400_000 + 3, 0, -1, -1.5, -999, -1000, -1001, Date.UTC(1969, 0, 1, 0, 0, 0, 17)];
    for (const ms of times) expect(isoTime(ms), String(ms)).toBe(new Date(ms).toISOString());
  });
});

describe('AuditLog lines that cannot be written', () => {
  it('are said on the log at the 1st and 10th of a streak, with the count, and lines written again are said (review s22: they were lost silently)', () => {
    const logged: Array<Record<string, unknown>> = [];
    const disk = { full: true, lines: [] as string[] };
    const audit = new AuditLog({
      component: 'worker',
      write: (line) => {
        if (disk.full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        disk.lines.push(line);
      },
      log: createLogger({ level: 'debug', write: (line) => logged.push(JSON.parse(line)) }),
    });
    for (let n = 0; n < 12; n++) expect(() => audit.record(record)).not.toThrow();
    expect(audit.failedWrites).toBe(12);
    expect(logged.filter((l) => l.level === 'error').map((l) => [l.lost, l.why])).toEqual([
      [1, 'ENOSPC: no space left on device, write'],
      [10, 'ENOSPC: no space left on device, write'],
    ]);
    disk.full = false;
    audit.record(record);
    audit.record(record);
    expect(disk.lines).toHaveLength(2);
    expect(logged.filter((l) => l.msg === 'Audit lines are written again')).toEqual([expect.objectContaining({ level: 'info', lost: 12 })]);
  });

  it('never throw into a call when the log fails too (both on one broken stream)', () => {
    const audit = new AuditLog({
      component: 'worker',
      write: () => {
        throw new Error('EPIPE');
      },
      log: createLogger({ write: () => {
        throw new Error('EPIPE');
      } }),
    });
    expect(() => audit.record(record)).not.toThrow();
    expect(audit.failedWrites).toBe(1);
  });
});

describe('wallClockMs', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('is the wall clock to the millisecond, and follows it when it is set 8 hours on (review s22: the monotonic clock did not)', () => {
    expect(Math.abs(wallClockMs() - Date.now())).toBeLessThanOrEqual(1);
    const later = Date.now() + 8 * 3600_000;
    vi.spyOn(Date, 'now').mockReturnValue(later);
    expect(Math.abs(wallClockMs() - later)).toBeLessThanOrEqual(1);
    const lines: string[] = [];
    new AuditLog({ component: 'sidecar', write: (line) => lines.push(line) }).record({ ...record, durationMs: 0 });
    expect(Date.parse(JSON.parse(lines[0]!).time)).toBeGreaterThanOrEqual(later - 1);
  });

  it('times a call on the monotonic clock: a clock set an hour on during it is not its duration (review of s22)', () => {
    const lines: string[] = [];
    const audit = new AuditLog({ component: 'sidecar', write: (line) => lines.push(line) });
    const started = audit.now();
    vi.spyOn(Date, 'now').mockReturnValue(Date.now() + 3600_000);
    const durationMs = audit.now() - started;
    expect(durationMs).toBeLessThan(1000);
    audit.record({ ...record, durationMs }, started);
    const line = JSON.parse(lines[0]!);
    expect(line.durationMs).toBeLessThan(1000);
    expect(Date.parse(line.time)).toBeGreaterThan(Date.now() - 1000); // on the clock as set now
  });

  it('takes no offset from a reading the scheduler paused between its two clocks, which took the time back on the next one (CI s29)', () => {
    const reads = (monotonic: number[], wall: number) => {
      const perf = vi.spyOn(performance, 'now');
      for (const value of monotonic) perf.mockReturnValueOnce(value);
      vi.spyOn(Date, 'now').mockReturnValueOnce(wall);
      return wallClockMs();
    };
    const settled = reads([1000, 1000.1], 1_001_000);
    // Paused 3 ms after reading the monotonic clock: the wall clock read says 3 ms too much.
    const paused = reads([1001, 1004.1], 1_001_004);
    const next = reads([1001.5, 1001.6], 1_001_001);
    expect([settled, paused, next]).toEqual([1_001_000, 1_001_001, 1_001_001.5]);
  });

  it('never goes back between the wall clock\'s millisecond steps', () => {
    let last = wallClockMs();
    for (let n = 0; n < 10_000; n++) {
      const now = wallClockMs();
      expect(now).toBeGreaterThanOrEqual(last);
      last = now;
    }
  });
});
