import { describe, expect, it } from 'vitest';
import { createLogger, deferredChild } from './log.ts';

/** A logger at `level` whose lines are collected, without their time. */
function collecting(level: 'debug' | 'info' = 'debug') {
  const lines: string[] = [];
  const log = createLogger({ level, fields: { component: 'sidecar', server: 'base' }, write: (line) => lines.push(line.replace(/"time":"[^"]+",/, '')) });
  return { lines, log };
}

describe('deferredChild', () => {
  it('writes exactly the lines of the shared child: the fields in the same order, later ones winning, secrets redacted', () => {
    const shared = collecting();
    const deferred = collecting();
    const fields = { server: 'files', agent: 'alice', token: 'not for the log' };
    const write = (log: ReturnType<typeof createLogger>) => {
      log.debug('Modern request', { revision: 'sha256:1' });
      log.info('Hosting server');
      log.warn('Refused', { agent: 'bob', error: new TypeError('boom') });
      log.error('Failed', { session: null });
      log.child({ session: 's-1' }).info('Nested', { server: 'docs' });
    };
    write(shared.log.child(fields));
    write(deferredChild(deferred.log, fields));
    expect(deferred.lines).toEqual(shared.lines);
    expect(deferred.lines[0]).toBe('{"level":"debug","msg":"Modern request","component":"sidecar","server":"files","agent":"alice","token":"[redacted]","revision":"sha256:1"}');
  });

  it('keeps to the parent\'s level', () => {
    const { lines, log } = collecting('info');
    deferredChild(log, { server: 'files' }).debug('Not written');
    expect(lines).toEqual([]);
  });
});
