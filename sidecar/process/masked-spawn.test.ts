import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// What spawnMasked and runHelper hand a real child is in test/sandbox/stray-fd.test.ts (the
// sidecar's children) and test/worker/deno-worker-stray-fd.test.ts (the CLI's).
const ROOT = join(import.meta.dirname, '..', '..');
const THE_ONE = 'sidecar/process/masked-spawn.ts';
/** Every process the sidecar and the CLI start; `cli/` may import `sidecar/`, so it has no spawn of its own. */
const SPAWNING_TREES = ['sidecar', 'cli'];

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

describe('the sidecar and the CLI spawn only through spawnMasked', () => {
  it('import nothing that starts a process from node:child_process outside masked-spawn.ts', () => {
    const files = SPAWNING_TREES.flatMap((tree) => (readdirSync(join(ROOT, tree), { recursive: true }) as string[]).map((f) => join(tree, f))).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(files).toContain('cli/deno-worker-process.ts');
    const offenders = files.filter((f) => f !== THE_ONE).flatMap((f) => spawningImports(readFileSync(join(ROOT, f), 'utf8')).map((name) => `${f}: ${name}`));
    expect(offenders).toEqual([]);
    expect(spawningImports(readFileSync(join(ROOT, THE_ONE), 'utf8'))).toContain('spawn');
  });

  it('tells a type import from a spawning one', () => {
    expect(spawningImports(`import type { ChildProcess } from 'node:child_process';`)).toEqual([]);
    expect(spawningImports(`import { type ChildProcess, execFile } from 'child_process';`)).toEqual(['execFile']);
    expect(spawningImports(`import * as cp from 'node:child_process';`)).toEqual(['* as cp']);
    expect(spawningImports(`const cp = await import('node:child_process');`)).toHaveLength(1);
  });
});
