import { describe, expect, it } from 'vitest';
import { createLogger, parseLogLevel, redact } from './log.ts';

function collect(fields?: Record<string, unknown>) {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', write: (line) => lines.push(line), ...(fields !== undefined ? { fields } : {}) });
  return { log, lines: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('redact', () => {
  it('replaces secret-looking keys at the top level, as before', () => {
    expect(redact({ token: 't', apiKey: 'k', server: 'echo' })).toEqual({ token: '[redacted]', apiKey: '[redacted]', server: 'echo' });
  });

  it('replaces them in nested objects and arrays too', () => {
    const fields = {
      request: { headers: { Authorization: 'Bearer S1', accept: 'application/json' }, env: { DB_PASSWORD: 'S2', HOME: '/home/a' } },
      servers: [{ name: 'a', 'api-key': 'S3' }],
    };
    expect(redact(fields)).toEqual({
      request: { headers: { Authorization: '[redacted]', accept: 'application/json' }, env: { DB_PASSWORD: '[redacted]', HOME: '/home/a' } },
      servers: [{ name: 'a', 'api-key': '[redacted]' }],
    });
    expect(fields.request.headers.Authorization).toBe('Bearer S1'); // the caller's object is not changed
  });

  it('stops at a depth limit instead of writing what it did not look at', () => {
    let deep: Record<string, unknown> = { secret: 'DEEP-SECRET' };
    for (let i = 0; i < 20; i++) deep = { next: deep };
    const text = JSON.stringify(redact({ deep }));
    expect(text).not.toContain('DEEP-SECRET');
    expect(text).toContain('[too deep]');
  });

  it('reduces an error, nested or not, to name, message, code and reason, without the credentials of URLs in its message', () => {
    const error = Object.assign(new Error('fetch failed for https://svc:S1@collector.example/v1/traces?key=S2'), { code: 'ECONNREFUSED', extra: 'dropped' });
    const expected = { name: 'Error', message: 'fetch failed for https://[redacted]@collector.example/v1/traces?[redacted]', code: 'ECONNREFUSED' };
    expect(redact({ error, nested: { error } })).toEqual({ error: expected, nested: { error: expected } });
  });

  it('leaves values that are not plain objects to JSON.stringify', () => {
    const when = new Date('2026-01-01T00:00:00Z');
    expect(JSON.parse(JSON.stringify(redact({ when, n: 1, s: 'x', none: null })))).toEqual({ when: '2026-01-01T00:00:00.000Z', n: 1, s: 'x', none: null });
  });
});

describe('createLogger', () => {
  it('keeps time, level and msg whatever a line\'s fields are named', () => {
    const { log, lines } = collect();
    log.warn('Real message', { msg: 'audit', level: 'debug', time: '1970-01-01T00:00:00.000Z', server: 'echo' });
    const [line] = lines();
    expect(line).toMatchObject({ level: 'warn', msg: 'Real message', server: 'echo' });
    expect(line!.time).not.toBe('1970-01-01T00:00:00.000Z');
    expect(Object.keys(line!).slice(0, 3)).toEqual(['time', 'level', 'msg']);
  });

  it('keeps the logger\'s component against a line field of that name, and a child may still set its own', () => {
    const { log, lines } = collect({ component: 'worker' });
    log.info('one', { component: 'sidecar' });
    log.child({ component: 'status' }).info('two');
    log.child({ msg: 'audit' }).info('three');
    expect(lines().map((l) => [l.component, l.msg])).toEqual([['worker', 'one'], ['status', 'two'], ['worker', 'three']]);
  });

  it('lets a line field name component when the logger has none', () => {
    const { log, lines } = collect();
    log.info('one', { component: 'sidecar' });
    expect(lines()[0]).toMatchObject({ component: 'sidecar' });
  });

  it('redacts nested secrets on the written line', () => {
    const { log, lines } = collect();
    log.info('Request', { headers: { cookie: 'S1' } });
    expect(lines()[0]).toMatchObject({ headers: { cookie: '[redacted]' } });
  });
});

describe('parseLogLevel', () => {
  it('reads a level in any case, and takes a name that is no level (an inherited object key among them) for info (review s21)', () => {
    expect(['debug', 'WARN', ' Error ', 'info'].map(parseLogLevel)).toEqual(['debug', 'warn', 'error', 'info']);
    expect(['constructor', 'toString', '__proto__', 'verbose', '', undefined].map(parseLogLevel)).toEqual(['info', 'info', 'info', 'info', 'info', 'info']);
  });
});
