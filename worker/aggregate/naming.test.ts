import { describe, expect, it } from 'vitest';
import { MAX_NAME_LENGTH, NameTable, namespacedName, splitNamespacedName } from './naming.ts';

describe('aggregate namespacing', () => {
  it('joins server and name with "__" and splits at the first "__"', () => {
    expect(namespacedName('files', 'read_file')).toBe('files__read_file');
    expect(splitNamespacedName('files__read__file')).toEqual({ server: 'files', name: 'read__file' });
    expect(splitNamespacedName('files')).toBeNull();
    expect(splitNamespacedName('__x')).toBeNull();
    expect(splitNamespacedName('files__')).toBeNull();
  });

  it('keeps names within 128 characters and routes shortened aliases back', () => {
    const table = new NameTable();
    const long1 = `${'x'.repeat(150)}-one`;
    const long2 = `${'x'.repeat(150)}-two`;
    const a = table.add('everything', long1);
    const b = table.add('everything', long2);
    expect(a.length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
    expect(b.length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
    expect(a).not.toBe(b);
    expect(a.startsWith('everything__')).toBe(true);
    expect(table.resolve(a)).toEqual({ server: 'everything', name: long1 });
    expect(table.resolve(b)).toEqual({ server: 'everything', name: long2 });
  });

  it('resolves names it never handed out by splitting, and forgets a server on refresh', () => {
    const table = new NameTable();
    const full = table.add('docs', `${'y'.repeat(200)}`);
    expect(table.resolve('docs__search')).toEqual({ server: 'docs', name: 'search' });
    table.clearServer('docs');
    expect(table.resolve(full)?.name).not.toBe('y'.repeat(200));
  });
});
