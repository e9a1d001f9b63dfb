/**
 * The layering rules of DESIGN §3, checked mechanically: `worker/` and `shared/` are web-standard,
 * `shared/` imports neither `worker/` nor `sidecar/`, and `worker/` never imports `sidecar/`.
 */
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
/** Node adapters may use Node; everything else under worker/ must run on any web runtime. */
const NODE_ALLOWED = new Set(['worker/adapters/node.ts']);
const NODE_ONLY_PACKAGES = ['ws', '@hono/node-server', 'cross-spawn', 'express', 'ajv'];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specs: string[] = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    specs.push((m[1] ?? m[2] ?? m[3])!);
  }
  return specs;
}

function resolvedDir(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  return relative(ROOT, join(ROOT, file, '..', spec)).split('/')[0] ?? null;
}

describe('layering', () => {
  it('shared/ imports neither worker/ nor sidecar/, nor any node: module or Node-only package', () => {
    const offences: string[] = [];
    for (const file of sourceFiles('shared')) {
      for (const spec of importsOf(file)) {
        const dir = resolvedDir(file, spec);
        if (dir === 'worker' || dir === 'sidecar') offences.push(`${file} imports ${spec}`);
        if (spec.startsWith('node:') || NODE_ONLY_PACKAGES.includes(spec)) offences.push(`${file} imports ${spec}`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('worker/ never imports sidecar/, and only its Node adapter may import node: modules', () => {
    const offences: string[] = [];
    for (const file of sourceFiles('worker')) {
      for (const spec of importsOf(file)) {
        if (resolvedDir(file, spec) === 'sidecar') offences.push(`${file} imports ${spec}`);
        if (NODE_ALLOWED.has(file)) continue;
        if (spec.startsWith('node:') || NODE_ONLY_PACKAGES.includes(spec)) offences.push(`${file} imports ${spec}`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('an esbuild neutral-platform bundle of the worker entry contains no node: specifier', async () => {
    const entry = ['worker/adapters/deno-serve.ts', 'worker/adapters/deno.ts', 'worker/app.ts'].find((f) => existsSync(join(ROOT, f)));
    expect(entry, 'a worker entry exists').toBeDefined();
    const nodeSpecifiers: string[] = [];
    const result = await build({
      entryPoints: [join(ROOT, entry!)],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['worker', 'browser', 'import', 'default'],
      logLevel: 'silent',
      plugins: [
        {
          name: 'record-node-specifiers',
          setup(b) {
            b.onResolve({ filter: /^node:|^(fs|path|child_process|os|net|http|https|crypto|stream|url|util|events)$/ }, (args) => {
              nodeSpecifiers.push(`${args.path} (from ${relative(ROOT, args.importer)})`);
              return { path: args.path, external: true };
            });
          },
        },
      ],
    });
    const text = result.outputFiles.map((f) => f.text).join('\n');
    expect(nodeSpecifiers).toEqual([]);
    expect(text).not.toMatch(/from\s*["']node:/);
  });
});
