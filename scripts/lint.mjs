#!/usr/bin/env node
/**
 * The project's own rules, checked by `npm run lint` (after the web-only type-check). Import rules
 * (layers, node: modules, cycles) live in one place, test/layering.test.ts, which `npm run lint`
 * runs too.
 * - no console.log in sidecar/ or worker/ outside the CLI and entry adapters: stdout may belong to a protocol;
 * - no .only in tests, no skipped test without a written reason;
 * - worker/, shared/, sidecar/ and cli/ import zod as `import * as z from '…/shared/zod.ts'`, which
 *   is zod/mini with English messages registered (only shared/zod.ts imports 'zod/mini' itself; a
 *   type-only import of it is fine): a module that parses can then never show "Invalid input"
 *   for want of the locale. zod classic hangs every method on the schema prototypes, so dist/worker.js would keep
 *   all of them (about 60 KB minified) whatever the code calls, and a named `import { z }` binds
 *   the whole namespace too; zod/mini's functions and a namespace import let esbuild drop what is
 *   unused. sidecar/ and cli/ follow so that one dialect composes the shared schemas, which have no
 *   methods to chain (tests may use classic, as the SDK's tool registration does);
 * - worker/ builds its apps with worker/trie-router-hono.ts's `Hono`, not 'hono''s: that one brings
 *   a second router into dist/worker.js (issue 17);
 * - files over 450 lines are listed as a warning (aim for 70-300).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const problems = [];
const warnings = [];

function walk(dir) {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    return statSync(join(root, path)).isDirectory() ? walk(path) : /\.(ts|mjs)$/.test(name) ? [path] : [];
  });
}

for (const file of ['shared', 'worker', 'sidecar', 'cli', 'test', 'scripts'].flatMap(walk)) {
  const text = readFileSync(join(root, file), 'utf8');
  const lines = text.split('\n');
  const isTest = file.endsWith('.test.ts');
  lines.forEach((line, i) => {
    const at = `${file}:${i + 1}`;
    if ((file.startsWith('sidecar/') || file.startsWith('worker/')) && !isTest && !file.startsWith('cli/') && !file.startsWith('worker/adapters/') && /\bconsole\.log\(/.test(line)) {
      problems.push(`${at}: console.log writes to stdout, which may belong to a protocol; use the logger`);
    }
    if (/^(worker|shared|sidecar|cli)\//.test(file) && !isTest && file !== 'shared/zod.ts' && /from 'zod(\/[^']*)?'/.test(line) && !/^import type \* as z from 'zod\/mini';$/.test(line)) {
      problems.push(`${at}: import zod as import * as z from shared/zod.ts (zod/mini with English messages; zod classic or a named import keeps all of zod's methods in the bundles)`);
    }
    if (/^(worker|shared|sidecar|cli)\//.test(file) && !isTest && /from '(\.\.?\/)+(shared\/)?zod\.ts'/.test(line) && !/^import (type )?\* as z from '(\.\.?\/)+(shared\/)?zod\.ts';$/.test(line)) {
      problems.push(`${at}: import shared/zod.ts as a namespace (import * as z), so esbuild can drop what is unused`);
    }
    if (file.startsWith('worker/') && !isTest && /^import \{[^}]*(?<!type )\bHono\b[^}]*\} from 'hono';/.test(line)) {
      problems.push(`${at}: 'hono''s Hono brings the RegExpRouter too; import Hono from worker/trie-router-hono.ts`);
    }
    if (isTest && /\b(it|test|describe)\.only\(/.test(line)) problems.push(`${at}: .only would skip the rest of the suite`);
    if (isTest && /\b(it|test|describe)\.(skip|todo)\(/.test(line) && !/because|reason/i.test(lines[i - 1] ?? '' + line)) problems.push(`${at}: skipped test without a written reason`);
  });
  if (lines.length > 450 && !isTest) warnings.push(`${file}: ${lines.length} lines`);
}

for (const w of warnings) process.stderr.write(`warning: long file ${w}\n`);
for (const p of problems) process.stderr.write(`${relative('.', p)}\n`);
if (problems.length > 0) {
  process.stderr.write(`lint: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n`);
  process.exit(1);
}
process.stdout.write('lint: ok\n');
