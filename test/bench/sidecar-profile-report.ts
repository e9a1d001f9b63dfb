/**
 * Where a sidecar's CPU went, from a `--cpu-prof` profile of the bundle and its source map: µs
 * per call, over the samples inside a time window (the timed loop, not the start or the warm-up).
 *
 * Three views: by what ran (the leaf frame: a source file of the bundle, a `node:` internal, a
 * native binding such as `writev`, the garbage collector), by owner (the deepest frame of the
 * bundle on the stack, so a pipe write is counted in the file that wrote it), and the busiest
 * functions by self time, named by source file and line.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { REPO } from './processes.ts';
import type { CpuProfile, ProfileNode } from './cpu-profile.ts';


/** A window in µs of the monotonic clock (`process.hrtime`), which V8's profile timestamps also use. */
export interface Window {
  fromUs: number;
  toUs: number;
}

const SPECIAL = new Set(['(garbage collector)', '(program)', '(idle)', '(root)']);

export function profileReport(path: string, calls: number, window?: Window): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const maps = new Map<string, SourceMap | null>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const where = (node: ProfileNode): { kind: 'bundle' | 'node' | 'native' | 'special'; file: string; line: number } => {
    const { url, functionName, lineNumber, columnNumber } = node.callFrame;
    if (url === '') return { kind: SPECIAL.has(functionName) ? 'special' : 'native', file: functionName, line: 0 };
    if (url.startsWith('node:')) return { kind: 'node', file: url, line: lineNumber + 1 };
    const map = sourceMapOf(url, maps);
    const entry = map?.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
    if (entry?.originalSource === undefined) return { kind: 'bundle', file: url, line: lineNumber + 1 };
    return { kind: 'bundle', file: shorten(entry.originalSource), line: (entry.originalLine ?? 0) + 1 };
  };
  const located = new Map<number, ReturnType<typeof where>>();
  const loc = (id: number) => {
    let l = located.get(id);
    if (l === undefined) located.set(id, (l = where(byId.get(id)!)));
    return l;
  };

  const leaf = new Map<string, number>();
  const owner = new Map<string, number>();
  const fn = new Map<string, number>();
  let busy = 0;
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (window !== undefined && (t < window.fromUs || t > window.toUs)) return;
    const here = loc(id);
    const name = byId.get(id)!.callFrame.functionName;
    if (name === '(idle)') return;
    busy += delta;
    const what = here.kind === 'bundle' ? packageOf(here.file) : here.kind === 'node' ? here.file.replace(/^node:internal\//, 'node:') : `${here.kind === 'native' ? 'native ' : ''}${here.file}`;
    add(leaf, what, delta);
    add(fn, `${name || '(anonymous)'} ${here.kind === 'bundle' || here.kind === 'node' ? `${here.file}:${here.line}` : `(${here.kind})`}`, delta);
    let up: number | undefined = id;
    while (up !== undefined && loc(up).kind !== 'bundle') up = parent.get(up);
    add(owner, up === undefined ? `(no bundle frame) ${what}` : packageOf(loc(up).file), delta);
  });
  const top = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `    ${(us / calls).toFixed(1).padStart(7)} µs  ${k}`).join('\n');
  return `${(busy / calls).toFixed(0)} µs CPU per call in the profile (idle excluded, ${calls} calls)\n  by what ran:\n${top(leaf, 25)}\n  by owner (deepest bundle frame):\n${top(owner, 25)}\n  by function (self):\n${top(fn, 40)}`;
}

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function sourceMapOf(url: string, cache: Map<string, SourceMap | null>): SourceMap | null {
  if (!cache.has(url)) {
    try {
      cache.set(url, new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8'))));
    } catch {
      cache.set(url, null);
    }
  }
  return cache.get(url)!;
}

/** A source path relative to the repo (esbuild writes them relative to the bundle). */
function shorten(source: string): string {
  const at = source.lastIndexOf('node_modules/');
  if (at !== -1) return source.slice(at);
  const path = source.startsWith('file://') ? fileURLToPath(source) : source;
  const i = path.indexOf(REPO);
  return i !== -1 ? path.slice(i + REPO.length) : path.replace(/^(\.\.\/)+/, '');
}

/** `node_modules/ws/lib/x.js` → `ws`; a project file stays as it is. */
function packageOf(file: string): string {
  if (!file.startsWith('node_modules/')) return file;
  const parts = file.slice('node_modules/'.length).split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}
