/**
 * `npm run bench -- --profile`: where the time goes on the hot path. Starts the stack with the
 * V8 inspector on (Deno `--inspect`, node `--inspect`, both on a free loopback port), records a
 * CPU profile of the worker and of the sidecar over the Chrome DevTools Protocol while one agent
 * session runs sequential echo calls through (b), or a modern agent through (m) with `--profile-variant m`, and prints the functions and packages with the
 * most self time. The raw profiles go to `bench-results/profiles/<label>-{worker,sidecar}.cpuprofile`
 * (open them in Chrome DevTools → Performance, or speedscope).
 *
 * The inspector costs a little itself, so these runs are for finding hot spots, not for numbers.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { connectHttp, echoLoop, modernAgent, type Agent } from './client.ts';
import { REPO, type BenchProcess, type ProcessRegistry } from './processes.ts';
import { startStack, TOKENS } from './stack.ts';
import { summarize } from './stats.ts';
import type { CpuProfile, ProfileNode } from './cpu-profile.ts';


/** A minimal CDP session: request/response by id, nothing else. */
class Inspector {
  readonly #ws: WebSocket;
  #next = 1;
  readonly #waiting = new Map<number, (result: unknown) => void>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { id?: number; result?: unknown };
      if (message.id !== undefined) this.#waiting.get(message.id)?.(message.result);
    });
  }

  static async attach(proc: BenchProcess): Promise<Inspector> {
    const url = (await proc.waitFor(/Debugger listening on (ws:\/\/\S+)/))[1]!;
    const ws = new WebSocket(url);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return new Inspector(ws);
  }

  send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve) => {
      this.#waiting.set(id, (result) => resolve(result as T));
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    this.#ws.close();
  }
}

export async function profileUnderLoad(registry: ProcessRegistry, options: { calls: number; label: string; payloadBytes?: number; variant?: 'b' | 'm'; log(line: string): void }): Promise<void> {
  const payload = options.payloadBytes ? ' ' + 'x'.repeat(options.payloadBytes) : '';
  const inspect = ['--inspect=127.0.0.1:0'];
  const stack = await startStack(registry, { denoFlags: inspect, sidecarNodeFlags: inspect });
  try {
    const targets = { worker: await Inspector.attach(stack.worker), sidecar: await Inspector.attach(stack.sidecar) };
    const url = `${stack.url}/servers/everything/mcp`;
    const agent: Agent = options.variant === 'm' ? modernAgent(url, TOKENS.modern) : await connectHttp(url, TOKENS.plain);
    await echoLoop(agent, 'echo', 0, payload ? 10 : 200, 'profile warmup', payload);
    for (const inspector of Object.values(targets)) {
      await inspector.send('Profiler.enable');
      await inspector.send('Profiler.setSamplingInterval', { interval: 100 });
      await inspector.send('Profiler.start');
    }
    const timed = await echoLoop(agent, 'echo', options.calls, 0, 'profile', payload);
    const s = summarize(timed);
    options.log(`\nprofiled ${s.calls} echo calls${payload ? ` of ${options.payloadBytes} bytes` : ''} through (${options.variant ?? 'b'}): p50 ${s.p50} ms, ${s.callsPerSec} calls/s (inspector attached)`);
    const dir = join(REPO, 'bench-results', 'profiles');
    mkdirSync(dir, { recursive: true });
    for (const [name, inspector] of Object.entries(targets)) {
      const { profile } = await inspector.send<{ profile: CpuProfile }>('Profiler.stop');
      writeFileSync(join(dir, `${options.label}-${name}.cpuprofile`), JSON.stringify(profile));
      options.log(`\n${name}: ${report(profile, s.calls)}`);
      inspector.close();
    }
    options.log(`\nProfiles written to ${dir}`);
    await agent.close();
  } finally {
    stack.dispose();
  }
}

/** Self time per function and per package, in µs per echo call, busiest first. */
function report(profile: CpuProfile, calls: number): string {
  const self = new Map<number, number>();
  profile.samples.forEach((node, i) => self.set(node, (self.get(node) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = shorten(url);
    if (functionName !== '(idle)') busy += us;
    byFunction.set(`${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`, (byFunction.get(`${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`) ?? 0) + us);
    const pkg = where === '' ? functionName : packageOf(where);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map].filter(([k]) => k !== '(idle)' && !k.startsWith('(idle) ')).sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `    ${(us / calls).toFixed(1).padStart(7)} µs  ${k}`).join('\n');
  return `${(busy / calls).toFixed(0)} µs CPU per call (idle excluded)\n  by package:\n${top(byPackage, 12)}\n  by function (self):\n${top(byFunction, 30)}`;
}

function shorten(url: string): string {
  return url.replace(/^file:\/\//, '').replace(REPO, '');
}

function packageOf(path: string): string {
  const at = path.lastIndexOf('node_modules/');
  if (at === -1) return path.startsWith('/') || path.startsWith('node:') || path.startsWith('ext:') ? path.split('/').slice(0, 2).join('/') : path.split('/')[0]!;
  const parts = path.slice(at + 'node_modules/'.length).split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}
