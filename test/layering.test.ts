/**
 * The layering rules of DESIGN §3, all of them, in one place:
 *
 * - `cli/` may import `worker/` and `sidecar/`; nothing else may import `cli/`;
 * - `sidecar/` never imports `worker/`; `worker/` never imports `sidecar/`;
 * - `shared/` imports none of `worker/`, `sidecar/`, `cli/`;
 * - `worker/` and `shared/` import no `node:` module (nor a bare Node built-in) and no package
 *   outside the web-standard list; only `worker/adapters/node/` may use Node-only packages;
 * - `sidecar/process/` imports neither `sidecar/trust/`, `sidecar/host/` nor `sidecar/sandbox/`;
 * - runtime adapters stay apart: the worker core never imports `worker/adapters/`, and no adapter
 *   imports another's folder; Cloudflare Workers APIs (Durable Objects, `WebSocketPair`, the
 *   hibernation methods, `cloudflare:` modules) appear in `worker/adapters/cloudflare/` only, and
 *   its bundle, like Deno's, has no `node:` specifier;
 * - no import cycle among the project's TypeScript files.
 *
 * The direction rules bind source files; a `*.test.ts` beside its code may reach into `test/`
 * (and through it the other side), as integration tests must. Cycles are checked over every file,
 * tests included, and type-only imports count: a type-only edge still makes two modules
 * impossible to understand, move or split apart one at a time (the `config.ts` ↔
 * `config-checks.ts` pair this rule was written against was half type-only).
 *
 * Imports are read by esbuild's parser, not by a regular expression, so comments, strings and
 * template literals (the status page's script) never count; `import type` / `export type … from`
 * are turned into value imports first and `verbatimModuleSyntax` keeps unused ones, so every edge
 * the type-checker sees is seen here too.
 *
 * Set `SWITCHYARD_LAYERING_ROOT` to check another tree (a scratch copy with a deliberately wrong
 * import shows the failure messages).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { build, transform, type Plugin } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = process.env.SWITCHYARD_LAYERING_ROOT ?? join(import.meta.dirname, '..');
const SCANNED = ['shared', 'worker', 'sidecar', 'cli', 'test', 'scripts', 'bin'];

/** Packages known to run on every web runtime (Deno, Node, Workers); anything else is Node-only until shown otherwise. */
const WEB_PACKAGES = ['hono', 'zod', '@modelcontextprotocol/sdk', '@cfworker/json-schema', 'jose'];
/** The one place in `worker/` allowed Node-only packages (still no `node:` module). */
const NODE_ADAPTER = 'worker/adapters/node/';
const ADAPTERS = 'worker/adapters';
const CLOUDFLARE_ADAPTER = 'worker/adapters/cloudflare';
/** Calls and names only the Workers runtime has; outside its adapter they would tie the core to it. */
const WORKERS_ONLY_APIS = /\b(acceptWebSocket|WebSocketPair|WebSocketRequestResponsePair|serializeAttachment|deserializeAttachment|setWebSocketAutoResponse|getWebSocketAutoResponseTimestamp|idFromName|idFromString|newUniqueId|webSocketMessage|webSocketClose|DurableObjectState|DurableObjectNamespace)\b/;
/** Each worker entry that the neutral bundle test builds. */
const WORKER_ENTRIES = ['worker/adapters/deno/deno-serve.ts', 'worker/adapters/cloudflare/cloudflare-worker.ts'];

interface Edge {
  from: string;
  /** The specifier as written. */
  spec: string;
  /** Repo-relative file for a relative import, the package name for a bare one. */
  to: string;
  local: boolean;
}

function files(dir: string): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (name === 'node_modules' || name === 'fixtures') return [];
    if (statSync(join(ROOT, path)).isDirectory()) return files(path);
    return /\.(ts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Type-only imports become value imports, so esbuild keeps them as edges. */
function valueImportsOnly(text: string): string {
  return text.replace(/\bimport\s+type\s+(?!from\b)(?=[\w${*])/g, 'import ').replace(/\bexport\s+type\s+(?=[{*])/g, 'export ');
}

function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

function resolveLocal(from: string, spec: string): string {
  const path = relative(ROOT, join(ROOT, dirname(from), spec)).split(sep).join('/');
  if (!existsSync(join(ROOT, path)) && path.endsWith('.js') && existsSync(join(ROOT, path.replace(/\.js$/, '.ts')))) return path.replace(/\.js$/, '.ts');
  return path;
}

async function importGraph(): Promise<{ nodes: string[]; edges: Edge[] }> {
  const nodes = SCANNED.flatMap(files);
  const edges: Edge[] = [];
  const entries = new Set(nodes.map((f) => join(ROOT, f)));
  const recorder: Plugin = {
    name: 'record-imports',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        const from = relative(ROOT, args.importer).split(sep).join('/');
        const local = args.path.startsWith('.');
        edges.push({ from, spec: args.path, to: local ? resolveLocal(from, args.path) : args.path.startsWith('node:') ? args.path : packageName(args.path), local });
        return { path: args.path, external: true };
      });
      b.onLoad({ filter: /\.(ts|mts|mjs)$/ }, (args) => {
        if (!entries.has(args.path)) return undefined;
        return { contents: valueImportsOnly(readFileSync(args.path, 'utf8')), loader: args.path.endsWith('.mjs') ? 'js' : 'ts' };
      });
    },
  };
  await build({
    entryPoints: [...entries],
    bundle: true,
    write: false,
    outdir: join(ROOT, '.layering-out'),
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
    plugins: [recorder],
  });
  return { nodes, edges };
}

const graph = importGraph();

const isTest = (file: string) => /\.test\.ts$/.test(file);
const under = (file: string, dir: string) => file.startsWith(`${dir}/`);

interface Rule {
  from: string;
  forbidden: string[];
  why: string;
}

const DIRECTION_RULES: Rule[] = [
  { from: 'shared', forbidden: ['worker', 'sidecar', 'cli'], why: 'shared/ is imported by both sides and imports neither' },
  { from: 'worker', forbidden: ['sidecar', 'cli'], why: 'worker/ never imports sidecar/ or cli/: the edge bundle must not carry them' },
  { from: 'sidecar', forbidden: ['worker', 'cli'], why: 'sidecar/ never imports worker/ or cli/: dist/sidecar.js is built from it and must not carry the worker' },
  {
    from: 'sidecar/process',
    forbidden: ['sidecar/trust', 'sidecar/host', 'sidecar/sandbox'],
    why: 'sidecar/process/ knows no trust, host or sandbox policy code: backends plug into it, not the other way round',
  },
];

describe('layering (DESIGN §3)', () => {
  it('source files import only the layers they may', async () => {
    const { edges } = await graph;
    const offences: string[] = [];
    for (const edge of edges) {
      if (!edge.local || isTest(edge.from)) continue;
      for (const rule of DIRECTION_RULES) {
        if (!under(edge.from, rule.from)) continue;
        const hit = rule.forbidden.find((dir) => under(edge.to, dir));
        if (hit !== undefined) offences.push(`${edge.from} imports "${edge.spec}" (${hit}/): ${rule.why}`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('worker/ and shared/ import no node: module and no Node-only package', async () => {
    const { edges } = await graph;
    const offences: string[] = [];
    for (const edge of edges) {
      if (edge.local || isTest(edge.from) || !(under(edge.from, 'worker') || under(edge.from, 'shared'))) continue;
      if (edge.spec.startsWith('node:') || isBuiltin(edge.spec)) {
        offences.push(`${edge.from} imports "${edge.spec}": worker/ and shared/ are web-standard; put runtime specifics in the sidecar, the CLI or a worker adapter's injected option`);
      } else if (!WEB_PACKAGES.includes(edge.to) && !under(edge.from, NODE_ADAPTER.slice(0, -1))) {
        offences.push(`${edge.from} imports "${edge.spec}": not a known web-standard package (${WEB_PACKAGES.join(', ')}); only ${NODE_ADAPTER} may use Node-only packages`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('keeps runtime adapters apart: the core imports none, none imports another', async () => {
    const { edges } = await graph;
    const adapterOf = (file: string) => (under(file, ADAPTERS) ? file.split('/')[2] : null);
    const offences: string[] = [];
    for (const edge of edges) {
      if (!edge.local || isTest(edge.from) || !under(edge.from, 'worker') || !under(edge.to, ADAPTERS)) continue;
      const from = adapterOf(edge.from);
      if (from === null) offences.push(`${edge.from} imports "${edge.spec}": the worker core is runtime-neutral; a runtime adapter composes it, never the reverse`);
      else if (from !== adapterOf(edge.to)) offences.push(`${edge.from} imports "${edge.spec}": one runtime adapter never imports another's`);
    }
    expect(offences).toEqual([]);
  });

  it('uses Cloudflare Workers APIs in worker/adapters/cloudflare/ only', async () => {
    const { nodes, edges } = await graph;
    const offences: string[] = [];
    for (const edge of edges) {
      if (edge.spec.startsWith('cloudflare:') && !under(edge.from, CLOUDFLARE_ADAPTER)) offences.push(`${edge.from} imports "${edge.spec}": Workers modules belong in ${CLOUDFLARE_ADAPTER}/`);
    }
    for (const file of nodes.filter((f) => (under(f, 'worker') || under(f, 'shared')) && !isTest(f) && !under(f, CLOUDFLARE_ADAPTER))) {
      // Comments may name the APIs (they say why the core stays neutral); code may not.
      const code = (await transform(readFileSync(join(ROOT, file), 'utf8'), { loader: 'ts', legalComments: 'none' })).code;
      const hit = WORKERS_ONLY_APIS.exec(code);
      if (hit !== null) offences.push(`${file} uses "${hit[1]}": a Cloudflare Workers API; put it in ${CLOUDFLARE_ADAPTER}/ behind the registry or session interfaces`);
    }
    expect(offences).toEqual([]);
    expect(nodes.filter((f) => under(f, CLOUDFLARE_ADAPTER)).length, 'the Cloudflare adapter exists').toBeGreaterThan(0);
  });

  it('has no import cycle (type-only imports included)', async () => {
    const { nodes, edges } = await graph;
    const local = edges.filter((e) => e.local);
    const cycles = stronglyConnected(nodes, local).filter((c) => c.length > 1 || local.some((e) => e.from === c[0] && e.to === c[0]));
    expect(cycles.map((c) => `import cycle: ${cyclePath(c, local).join(' → ')} (break it by moving what both need into a third module)`)).toEqual([]);
  });

  it('reads every kind of import: dynamic and type-only ones are edges too', async () => {
    const { nodes, edges } = await graph;
    // cli/main.ts loads each command with a dynamic import.
    expect(edges.filter((e) => e.from === 'cli/main.ts').map((e) => e.to)).toContain('cli/check.ts');
    const typeOnly = nodes
      .filter((f) => !isTest(f))
      .map((f) => ({ from: f, spec: /^import\s+type\s[^;]*?from\s*'(\.[^']+)'/m.exec(readFileSync(join(ROOT, f), 'utf8'))?.[1] }))
      .find((i) => i.spec !== undefined);
    expect(typeOnly, 'some source file has an `import type` from a project file').toBeDefined();
    expect(edges).toContainEqual(expect.objectContaining({ from: typeOnly!.from, spec: typeOnly!.spec }));
  });

  it.each(WORKER_ENTRIES)('an esbuild neutral-platform bundle of %s contains no node: specifier', async (entry) => {
    expect(existsSync(join(ROOT, entry)), 'the worker entry exists').toBe(true);
    const nodeSpecifiers: string[] = [];
    const result = await build({
      entryPoints: [join(ROOT, entry)],
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
            b.onResolve({ filter: /.*/ }, (args) => {
              if (!args.path.startsWith('node:') && !isBuiltin(args.path)) return undefined;
              nodeSpecifiers.push(`${args.path} (from ${relative(ROOT, args.importer)})`);
              return { path: args.path, external: true };
            });
          },
        },
      ],
    });
    expect(nodeSpecifiers).toEqual([]);
    expect(result.outputFiles.map((f) => f.text).join('\n')).not.toMatch(/from\s*["']node:/);
  });
});

/** One concrete loop through a strongly connected component, from its first file back to it. */
function cyclePath(component: readonly string[], edges: readonly Edge[]): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const e of edges) {
      if (e.from !== v || !inside.has(e.to)) continue;
      if (e.to === start) {
        const path = [start];
        for (let w = v; w !== start; w = cameFrom.get(w)!) path.splice(1, 0, w);
        return [...path, start];
      }
      if (!cameFrom.has(e.to)) {
        cameFrom.set(e.to, v);
        queue.push(e.to);
      }
    }
  }
  return [...component, start];
}

/** Tarjan's strongly connected components; each component of more than one file is a cycle. */
function stronglyConnected(nodes: readonly string[], edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const e of edges) if (next.has(e.to)) next.get(e.from)?.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      out.push(component.reverse());
    }
  };
  for (const n of nodes) if (!index.has(n)) visit(n);
  return out;
}
