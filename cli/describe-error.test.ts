import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describeError } from './describe-error.ts';

const problemOf = (args: string[]): string => {
  try {
    parseArgs({ args, options: { port: { type: 'string', short: 'p' }, 'dry-run': { type: 'boolean' } } });
  } catch (error) {
    return describeError(error);
  }
  throw new Error('parsed');
};

describe('describeError', () => {
  it('words the argument parser\'s errors as the CLI words its own (review s21)', () => {
    expect(problemOf(['extra'])).toBe('Unexpected argument "extra": this command takes options only (see switchyard --help)');
    expect(problemOf(['--prot', '80'])).toBe('Unknown option "--prot" (see switchyard --help)');
    expect(problemOf(['--port'])).toBe('Missing value: --port needs one (see switchyard --help)');
    expect(problemOf(['-p'])).toBe('Missing value: --port needs one (see switchyard --help)');
    expect(problemOf(['--dry-run=yes'])).toBe('Option --dry-run takes no value: give it alone (see switchyard --help)');
  });
});
