import { describe, expect, it } from 'vitest';
import { workersAuditWrite, workersLogger } from './workers-console.ts';

function recorder() {
  const lines: Array<{ method: string; line: Record<string, unknown> }> = [];
  const record = (method: string) => (line: string) => lines.push({ method, line: JSON.parse(line) as Record<string, unknown> });
  return { lines, out: { log: record('log'), warn: record('warn'), error: record('error') } };
}

describe('log lines on Workers', () => {
  it('writes each level through its own console method, so Workers Logs sees errors only where there are', () => {
    const { lines, out } = recorder();
    const log = workersLogger('debug', out).child({ component: 'edge' });
    log.debug('d');
    log.info('i', { peer: 'laptop' });
    log.warn('w');
    log.error('e');
    expect(lines.map((l) => [l.method, l.line.level, l.line.msg, l.line.component])).toEqual([
      ['log', 'debug', 'd', 'edge'],
      ['log', 'info', 'i', 'edge'],
      ['warn', 'warn', 'w', 'edge'],
      ['error', 'error', 'e', 'edge'],
    ]);
    expect(lines[1]!.line.peer).toBe('laptop');
  });

  it('keeps to the log level', () => {
    const { lines, out } = recorder();
    const log = workersLogger('warn', out);
    log.info('dropped');
    log.warn('kept');
    expect(lines.map((l) => l.line.msg)).toEqual(['kept']);
  });

  it('writes an allowed call\'s audit line with console.log and a refusal\'s with console.warn, at the log level', () => {
    const { lines, out } = recorder();
    const write = workersAuditWrite('info', out);
    write('{"msg":"audit","decision":"allowed"}', 'info');
    write('{"msg":"audit","decision":"refused"}', 'warn');
    expect(lines.map((l) => [l.method, l.line.decision])).toEqual([['log', 'allowed'], ['warn', 'refused']]);
    const quiet = workersAuditWrite('warn', out);
    expect(quiet.drops?.('info')).toBe(true);
    quiet('{"msg":"audit","decision":"allowed"}', 'info');
    expect(lines).toHaveLength(2);
  });
});
