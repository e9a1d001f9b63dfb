/**
 * Where the worker's CPU goes per echo call under Deno, from a V8 CPU profile taken over the
 * inspector while agents call: `node --import tsx test/bench/worker-profile.ts [--variants b8,m8]
 * [--calls 4000] [--out bench-results/profiles] [--tree DIR] [--perf [--floor [--floor-relay]]]`, or `--report DATA --us N`
 * to read a recorded perf.data again. `--floor` profiles the 4-process floor's Deno edge under perf
 * instead of the worker: the same loop and split, to read the worker's against.
 *
 * Per variant (those of `worker-cpu.ts`: b, m, b8, m8) it starts the stack with the worker under
 * `deno run --inspect`, warms up, then profiles the timed calls only (100 µs sampling), and prints
 * the worker's CPU per call from /proc (all threads, kernel included) beside what the profile saw
 * on the JS thread, split by what ran: the worker's own files, packages, Deno's runtime JS
 * (`ext:`), and `(program)`, the native side of ops and the event loop that V8 cannot name. The
 * profile goes to `<out>/<variant>-worker.cpuprofile` (Chrome DevTools, speedscope). The inspector
 * costs a little itself: these runs say where, `worker-cpu.ts` says how much.
 *
 * @module
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { echoLoop, type Agent } from './client.ts';
import { connectLight, connectLightModern } from './light-client.ts';
import { installCleanup, ProcessRegistry, REPO, type BenchProcess } from './processes.ts';
import { buildSidecarBundle } from './sidecar-bundle.ts';
import { startStack, TOKENS } from './stack.ts';
import { bundleRelays, spawnFloor } from './floor.ts';
import { schedCpuNs } from './sched-cpu.ts';
import { denoPerfMapFlag, nodePerfMapFlags } from './perf-map.ts';
import type { CpuProfile, ProfileNode } from './cpu-profile.ts';

type Variant = 'b' | 'm' | 'b8' | 'm8';

const { values } = parseArgs({
  options: {
    variants: { type: 'string', default: 'b8,m8' },
    calls: { type: 'string', default: '4000' },
    warmup: { type: 'string', default: '400' },
    out: { type: 'string', default: join(REPO, 'bench-results', 'profiles') },
    tree: { type: 'string' },
    top: { type: 'string', default: '40' },
    perf: { type: 'boolean', default: false },
    /** Profile the 4-process floor's Deno edge under perf instead of the worker (implies `--perf`). */
    floor: { type: 'boolean', default: false },
    /** With `--floor`: the floor's Node relay instead of its Deno edge, to read the sidecar's split against. */
    'floor-relay': { type: 'boolean', default: false },
    /** `--report DATA --us N`: prints `perfReport` of a recorded perf.data whose calls cost N µs each. */
    report: { type: 'string' },
    us: { type: 'string' },
  },
});
const log = (line: string) => process.stdout.write(line + '\n');
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);


/** Request/response over the Chrome DevTools Protocol, nothing else. */
async function inspect(proc: BenchProcess): Promise<{ send<T>(method: string, params?: Record<string, unknown>): Promise<T>; close(): void }> {
  const url = (await proc.waitFor(/Debugger listening on (ws:\/\/\S+)/))[1]!;
  const ws = new WebSocket(url);
  await new Promise((done, fail) => ws.once('open', done).once('error', fail));
  const waiting = new Map<number, (result: unknown) => void>();
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  let next = 1;
  return {
    send: <T>(method: string, params: Record<string, unknown> = {}) =>
      new Promise<T>((done) => {
        const id = next++;
        waiting.set(id, (result) => done(result as T));
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

async function agentsFor(url: string, variant: Variant): Promise<Agent[]> {
  const count = variant.endsWith('8') ? 8 : 1;
  const make = () => (variant.startsWith('m') ? Promise.resolve(connectLightModern(url, TOKENS.modern)) : connectLight(url, TOKENS.plain));
  return Promise.all(Array.from({ length: count }, make));
}

/**
 * `--perf`: the same loop under Linux `perf record` instead of the inspector: on-CPU samples only
 * (a V8 profile samples wall time, so on a loaded box a descheduled thread's wait lands on
 * whatever JS ran last), the kernel and Deno's native side included; JIT frames are named through
 * `--perf-basic-prof`. Prints the split of `perfReport`.
 */
/** Names JIT frames for perf (a map file in /tmp that perf reads). */
const perfMap = () => denoPerfMapFlag(scratchDir);
/** The run's scratch dir (set first thing in main): V8's code log goes there, not into the working directory. */
let scratchDir = tmpdir();

async function perfVariant(bundle: string, variant: Variant, calls: number, warmup: number): Promise<void> {
  const stack = await startStack(registry, { sidecarBundle: bundle, denoFlags: [perfMap()], ...(values.tree !== undefined ? { workerRoot: resolve(values.tree) } : {}) });
  try {
    await perfLoop(stack.worker.pid, `${stack.url}/servers/everything/mcp`, variant, 'worker', calls, warmup);
  } finally {
    await registry.stop(stack.sidecar);
    await registry.stop(stack.worker);
  }
}

/**
 * `--perf --floor`: the same loop on the 4-process floor's Deno edge (`floor.ts`), so the worker's
 * split reads against the least a Deno edge of this shape spends in the kernel, in Deno's native
 * side and in JS. Legacy sessions only (b, b8): the floor has no modern path.
 */
async function perfFloorVariant(scratch: string, variant: Variant, calls: number, warmup: number): Promise<void> {
  if (variant.startsWith('m')) throw new Error(`The floor serves legacy sessions only: --floor takes b or b8, not ${variant}`);
  const floor = await spawnFloor(registry, 'floor4', await bundleRelays(scratch), { edge: [perfMap()], relay: nodePerfMapFlags(scratch) });
  try {
    if (values['floor-relay']) await perfLoop(floor.proxies.relay!, floor.url, variant, 'floor-relay', calls, warmup);
    else await perfLoop(floor.proxies.edge!, floor.url, variant, 'floor-edge', calls, warmup);
  } finally {
    await floor.stop();
  }
}

/** Warms up, then records `pid` under perf while `calls` echoes run, and prints the split. */
async function perfLoop(pid: number, url: string, variant: Variant, what: string, calls: number, warmup: number): Promise<void> {
  const agents = await agentsFor(url, variant);
  const each = Math.ceil(calls / agents.length);
  await Promise.all(agents.map((agent) => echoLoop(agent, 'echo', 0, Math.ceil(warmup / agents.length), 'warmup')));
  mkdirSync(values.out, { recursive: true });
  const data = join(values.out, `${variant}-${what}.perf.data`);
  const perf = spawn('perf', ['record', '-F', '2999', '-g', '-p', String(pid), '-o', data], { stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise((done) => setTimeout(done, 500)); // perf attaches
  const before = schedCpuNs(pid);
  const timed = await Promise.all(agents.map((agent) => echoLoop(agent, 'echo', each, 0, 'timed')));
  const usedUs = (schedCpuNs(pid) - before) / 1000;
  const stopped = new Promise((done) => perf.once('exit', done));
  perf.kill('SIGINT');
  await stopped;
  const total = each * agents.length;
  const errors = timed.reduce((n, t) => n + t.errors, 0);
  log(`\n(${variant}) ${total} calls, ${errors} errors: ${(usedUs / total).toFixed(0)} µs ${what} CPU per call (/proc, under perf); ${data}`);
  log(perfReport(execFileSync('perf', ['script', '-i', data, '-F', 'comm,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30 }), usedUs / total, Number(values.top)));
  await Promise.all(agents.map((agent) => agent.close()));
}

async function profileVariant(bundle: string, variant: Variant, calls: number, warmup: number): Promise<void> {
  const stack = await startStack(registry, { sidecarBundle: bundle, denoFlags: ['--inspect=127.0.0.1:0'], ...(values.tree !== undefined ? { workerRoot: resolve(values.tree) } : {}) });
  try {
    const inspector = await inspect(stack.worker);
    const agents = await agentsFor(`${stack.url}/servers/everything/mcp`, variant);
    const each = Math.ceil(calls / agents.length);
    await Promise.all(agents.map((agent) => echoLoop(agent, 'echo', 0, Math.ceil(warmup / agents.length), 'warmup')));
    await inspector.send('Profiler.enable');
    await inspector.send('Profiler.setSamplingInterval', { interval: 100 });
    await inspector.send('Profiler.start');
    const before = schedCpuNs(stack.worker.pid);
    const timed = await Promise.all(agents.map((agent) => echoLoop(agent, 'echo', each, 0, 'timed')));
    const usedUs = (schedCpuNs(stack.worker.pid) - before) / 1000;
    const { profile } = await inspector.send<{ profile: CpuProfile }>('Profiler.stop');
    inspector.close();
    const errors = timed.reduce((n, t) => n + t.errors, 0);
    const total = each * agents.length;
    mkdirSync(values.out, { recursive: true });
    const file = join(values.out, `${variant}-worker.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    log(`\n(${variant}) ${total} calls, ${errors} errors: ${(usedUs / total).toFixed(0)} µs worker CPU per call (/proc, profiler on); ${file}`);
    log(report(profile, total, Number(values.top)));
    await Promise.all(agents.map((agent) => agent.close()));
  } finally {
    await registry.stop(stack.sidecar);
    await registry.stop(stack.worker);
  }
}

/**
 * µs per call from `perf script` call chains (leaf first), scaled to the /proc figure: by what the
 * leaf is (Deno's native code, which holds V8's interpreter and builtins, the kernel, JIT code,
 * libc), by the outermost JS frame (what the event loop entered: the HTTP handler, a WebSocket
 * message, a continuation), and by the nearest JS frame, which owns the native and kernel work
 * below it (an op, a syscall, a builtin such as JSON.parse).
 */
export function perfReport(script: string, usPerCall: number, topN: number): string {
  const kinds = new Map<string, number>();
  const threads = new Map<string, number>();
  const outer = new Map<string, number>();
  const nearest = new Map<string, number>();
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const clean = (sym: string) => sym.replace(/^JS:[*+~^]?'?/, '').replace(/file:\/\/\/\S*?\/(worker|shared|node_modules)\//, '$1/');
  let samples = 0;
  for (const chunk of script.split('\n\n')) {
    const frames = chunk.split('\n').map((line) => /^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)$/.exec(line)).filter((m) => m !== null).map((m) => ({ sym: m[1]!, dso: m[2]! }));
    if (frames.length === 0) continue;
    samples++;
    // The sample's header line names its thread when the script has `comm`: Deno's main thread is
    // `deno`; V8's background threads (GC, the optimizing compiler) are `V8 DefaultWorke…`.
    const header = chunk.split('\n').find((line) => line.trim() !== '' && !line.startsWith('\t') && !line.startsWith(' '));
    add(threads, header === undefined ? '(no thread name)' : header.trim().startsWith('V8 ') ? 'V8 background threads' : header.trim());
    const leaf = frames[0]!;
    const kind = leaf.dso.includes('kernel') ? 'kernel' : leaf.sym.startsWith('JS:') ? 'JIT' : leaf.dso.includes('libc') ? 'libc' : 'deno native';
    add(kinds, kind);
    const js = frames.filter((f) => f.sym.startsWith('JS:'));
    add(nearest, js.length === 0 ? `(no JS frame) ${kind}` : clean(js[0]!.sym));
    add(outer, js.length === 0 ? `(no JS frame) ${kind}` : clean(js[js.length - 1]!.sym));
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, count]) => `    ${((count / samples) * usPerCall).toFixed(1).padStart(7)} µs  ${k}`).join('\n');
  return `  ${samples} samples\n  by thread:\n${top(threads, 4)}\n  by leaf:\n${top(kinds, 5)}\n  by outermost JS frame:\n${top(outer, 15)}\n  by nearest JS frame:\n${top(nearest, topN)}`;
}

/** Where a frame's code lives: the worker's own file, a package, Deno's runtime, or a native pseudo-frame. */
function ownerOf(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (url === '') return functionName;
  if (url.startsWith('ext:')) return url.split('/').slice(0, 1).join('/');
  const at = url.lastIndexOf('node_modules/');
  if (at !== -1) {
    const parts = url.slice(at + 'node_modules/'.length).split('/').filter((p) => p !== '.deno');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  return url.replace(/^file:\/\//, '').replace(/^.*?\/(worker|shared)\//, '$1/');
}

/** µs per call by owner and by function (self time), and by the worker file deepest on the stack. */
export function report(profile: CpuProfile, calls: number, topN: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  const ours = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    busy += us;
    const owner = ownerOf(node);
    add(owners, owner, us);
    add(functions, `${node.callFrame.functionName || '(anonymous)'} ${owner}${node.callFrame.url === '' ? '' : `:${node.callFrame.lineNumber + 1}`}`, us);
    let up: number | undefined = id;
    while (up !== undefined && !/^(worker|shared)\//.test(ownerOf(byId.get(up)!))) up = parent.get(up);
    add(ours, up === undefined ? '(no worker frame)' : ownerOf(byId.get(up)!), us);
  });
  const top = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `    ${(us / calls).toFixed(1).padStart(7)} µs  ${k}`).join('\n');
  return `  ${(busy / calls).toFixed(0)} µs per call on the JS thread in the profile (idle excluded)\n  by owner:\n${top(owners, 20)}\n  by worker file deepest on the stack:\n${top(ours, 20)}\n  by function (self):\n${top(functions, topN)}`;
}

async function main(): Promise<void> {
  if (values.report !== undefined) {
    log(perfReport(execFileSync('perf', ['script', '-i', values.report, '-F', 'comm,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30 }), Number(values.us ?? 1), Number(values.top)));
    return;
  }
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-worker-profile-'));
  scratchDir = scratch;
  registry.afterStop(() => rmSync(scratch, { recursive: true, force: true }));
  const bundle = await buildSidecarBundle(scratch);
  for (const variant of values.variants.split(',') as Variant[]) {
    if (values.floor) await perfFloorVariant(scratch, variant, Number(values.calls), Number(values.warmup));
    else await (values.perf ? perfVariant : profileVariant)(bundle, variant, Number(values.calls), Number(values.warmup));
  }
}

main()
  .then(async () => {
    await cleanup();
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`worker-profile: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
