import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// What spawnMasked and runHelper hand a real child is in test/sandbox/stray-fd.test.ts.
const SIDECAR = join(import.meta.dirname, '..');
const THE_ONE = 'process/masked-spawn.ts';

/** Every value (not `type`) name a file imports from `node:child_process`. */
function spawningImports(source: string): string[] {
  const names: string[] = [];
  for (const match of source.matchAll(/import\s+(type\s+)?(\{[^}]*\}|\*\s+as\s+\w+|\w+)\s+from\s+['"](?:node:)?child_process['"]/g)) {
    if (match[1] !== undefined) continue;
    names.push(...match[2]!.replace(/[{}]/g, '').split(',').map((n) => n.trim()).filter((n) => n !== '' && !n.startsWith('type ')));
  }
  for (const match of source.matchAll(/(?:require|import)\(\s*['"](?:node:)?child_process['"]\s*\)/g)) names.push(match[0]);
  return names;
}

describe('the sidecar spawns only through spawnMasked', () => {
  it('imports nothing that starts a process from node:child_process outside masked-spawn.ts', () => {
    const files = (readdirSync(SIDECAR, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const offenders = files.filter((f) => f !== THE_ONE).flatMap((f) => spawningImports(readFileSync(join(SIDECAR, f), 'utf8')).map((name) => `${relative(SIDECAR, join(SIDECAR, f))}: ${name}`));
    expect(offenders).toEqual([]);
    expect(spawningImports(readFileSync(join(SIDECAR, THE_ONE), 'utf8'))).toContain('spawn');
  });

  it('tells a type import from a spawning one', () => {
    expect(spawningImports(`import type { ChildProcess } from 'node:child_process';`)).toEqual([]);
    expect(spawningImports(`import { type ChildProcess, execFile } from 'child_process';`)).toEqual(['execFile']);
    expect(spawningImports(`import * as cp from 'node:child_process';`)).toEqual(['* as cp']);
    expect(spawningImports(`const cp = await import('node:child_process');`)).toHaveLength(1);
  });
});
