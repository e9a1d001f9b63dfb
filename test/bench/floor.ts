/**
 * The physical floor of an MCP gateway on this machine (issue 17: "a gateway in front of a local
 * process has a physical floor far below this … aim close to it"): minimal relays in front of the
 * same server-everything the latency bench uses, driven by the same clients, measured in turns
 * with Switchyard and supergateway, so that each gateway's distance from the least its shape can
 * cost, and whether a target is reachable at all here, read off one run.
 *
 * - 3-process floor (agent → relay → server), the least any supergateway-shaped gateway costs:
 *   `floor/floor-node-http.ts` (node:http, as supergateway is Node) and `floor/floor-deno-edge.ts`
 *   in `stdio` mode (Deno.serve, as Switchyard's worker is Deno).
 * - 4-process floor (agent → edge → relay → server), the least any Switchyard-shaped gateway
 *   (edge, link, sidecar) costs: the Deno edge in `link` mode, one WebSocket to
 *   `floor/floor-node-relay.ts` (Node, `ws` client side, masked, as the sidecar dials).
 * - direct: the SDK client spawning the server, no HTTP; its row gives the server's own CPU per
 *   echo, which every row's server column also shows, to subtract.
 *
 * Each floor relay parses a POST body once, writes it as a line, and answers with the matching line
 * (`floor/floor-sessions.ts`); one server process per session, as both gateways do. No auth, no
 * logging, no SSE: nothing a real gateway can skip less of.
 *
 * Measured: p50/p99 and CPU per echo at one session with the SDK client (`runVariants`, back and
 * forth), the light client's own CPU per call over fetch and node:http on the 3-process Node floor,
 * then calls/s at each level above 1 with the light client, every side in turns (`inTurnsOf`).
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { connectHttp } from './client.ts';
import { inTurnsOf, summarizeLevel, type ConcurrencyResult, type LevelTarget } from './concurrency.ts';
import { burnIn } from './burn-in.ts';
import { startSupergateway } from './gateways.ts';
import { runVariants, variants, type Variant, type VariantResult } from './latency.ts';
import { connectLight, LIGHT_TRANSPORT, type LightTransport } from './light-client.ts';
import { DENO, descendants, EVERYTHING, REPO, type BenchProcess, type ProcessRegistry } from './processes.ts';
import { freePort } from '../support/processes.ts';
import { TOKENS, type Stack } from './stack.ts';

export type FloorKind = 'floor3-node' | 'floor3-deno' | 'floor4';
/** The latency rows: direct stdio (a), Switchyard (b), supergateway (e), and the floors. */
export type FloorVariantId = 'a' | 'b' | 'e' | FloorKind;
export type FloorSide = 'switchyard' | 'supergateway' | FloorKind;

export const FLOOR_LABELS: Record<FloorKind, string> = {
  'floor3-node': '3-process floor, Node (node:http → stdio)',
  'floor3-deno': '3-process floor, Deno (Deno.serve → stdio)',
  floor4: '4-process floor (Deno.serve → WebSocket → Node relay → stdio)',
};

export interface FloorConcurrencyRow extends Omit<ConcurrencyResult, 'gateway' | 'client'> {
  side: FloorSide;
}

export interface FloorResult {
  latency: Array<VariantResult<FloorVariantId>>;
  /** The light client's own CPU per call (and p50) at one session on the 3-process Node floor, by HTTP client. */
  lightClient: Record<LightTransport, { clientCpuUsPerCall: number | null; p50: number }>;
  /** Which HTTP client drove the concurrency rows. */
  lightTransport: LightTransport;
  concurrency: FloorConcurrencyRow[];
}

/** A running floor relay: its URL, its proxy processes by name, and whose children the servers are. */
export interface FloorRelay {
  url: string;
  proxies: Record<string, number>;
  serverParent: number;
  stop(): Promise<void>;
}

const SERVER = [process.execPath, EVERYTHING, 'stdio'];
const EDGE = `${REPO}test/bench/floor/floor-deno-edge.ts`;

/** Bundles the two Node relays into `dir` (as the sidecar is run from its bundle: no tsx loader, no esbuild child). */
export async function bundleRelays(dir: string): Promise<{ http: string; relay: string }> {
  const out = { http: join(dir, 'floor-node-http.js'), relay: join(dir, 'floor-node-relay.js') };
  const bundle = (entry: string, outfile: string) =>
    build({
      entryPoints: [`${REPO}test/bench/floor/${entry}`],
      outfile,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external: ['bufferutil', 'utf-8-validate'],
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      logLevel: 'warning',
    });
  await bundle('floor-node-http.ts', out.http);
  await bundle('floor-node-relay.ts', out.relay);
  return out;
}

/** A floor relay of `kind`, listening, burnt in with `burnInCalls` echo calls (`burn-in.ts`). */
async function startFloor(registry: ProcessRegistry, kind: FloorKind, bundles: { http: string; relay: string }, burnInCalls: number): Promise<FloorRelay> {
  const relay = await spawnFloor(registry, kind, bundles);
  await burnIn(relay.url, burnInCalls);
  return relay;
}

/** Extra runtime flags (profiling): `edge` to the Deno edge's `deno run`, `relay` to the Node relay's `node`. */
export interface FloorFlags {
  edge?: readonly string[];
  relay?: readonly string[];
}

/** A floor relay of `kind`, listening (and linked, for the 4-process one). */
export async function spawnFloor(registry: ProcessRegistry, kind: FloorKind, bundles: { http: string; relay: string }, flags: FloorFlags = {}): Promise<FloorRelay> {
  const edgeFlags = flags.edge ?? [];
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const ready = (proc: BenchProcess, what: string) => proc.waitFor(new RegExp(`^${what}$`, 'm'));
  if (kind === 'floor3-node') {
    const relay = registry.spawn(kind, process.execPath, [bundles.http, String(port), ...SERVER]);
    await ready(relay, 'listening');
    return { url, proxies: { relay: relay.pid }, serverParent: relay.pid, stop: () => registry.stop(relay) };
  }
  const edge = registry.spawn(`${kind} edge`, DENO, ['run', '--quiet', ...edgeFlags, '--allow-net=127.0.0.1', '--allow-run', '--allow-read', EDGE, kind === 'floor4' ? 'link' : 'stdio', String(port), ...SERVER]);
  await ready(edge, 'listening');
  if (kind === 'floor3-deno') return { url, proxies: { edge: edge.pid }, serverParent: edge.pid, stop: () => registry.stop(edge) };
  const relay = registry.spawn('floor4 relay', process.execPath, [...(flags.relay ?? []), bundles.relay, `ws://127.0.0.1:${port}/link`, ...SERVER]);
  await ready(edge, 'linked');
  return {
    url,
    proxies: { edge: edge.pid, relay: relay.pid },
    serverParent: relay.pid,
    stop: async () => {
      await registry.stop(relay);
      await registry.stop(edge);
    },
  };
}

const FLOORS: readonly FloorKind[] = ['floor3-node', 'floor3-deno', 'floor4'];

export async function measureFloor(
  registry: ProcessRegistry,
  stack: Stack,
  options: { calls: number; warmup: number; burnIn: number; levels: readonly number[]; concurrencyCalls: number; log(line: string): void },
): Promise<FloorResult> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-floor-'));
  registry.afterStop(() => rmSync(dir, { recursive: true, force: true }));
  const bundles = await bundleRelays(dir);
  const log = options.log;

  const references = variants(registry, stack, options.burnIn).filter((v): v is Variant<'a' | 'b' | 'e'> => v.id === 'a' || v.id === 'b' || v.id === 'e');
  const floors = FLOORS.map((kind): Variant<FloorKind> => ({
    id: kind,
    label: FLOOR_LABELS[kind],
    tool: 'echo',
    open: async () => {
      const relay = await startFloor(registry, kind, bundles, options.burnIn);
      const agent = await connectHttp(relay.url);
      return { agent, proxies: relay.proxies, servers: () => descendants(relay.serverParent), done: relay.stop };
    },
  }));
  log('  one session, SDK client, back and forth:');
  const latency = await runVariants<FloorVariantId>([...references, ...floors], { calls: options.calls, warmup: options.warmup, rounds: 2, backAndForth: true, log });

  const lightClient = await measureLightClient(registry, bundles, options.calls, options.burnIn, log);

  const concurrency: FloorConcurrencyRow[] = [];
  for (const sessions of options.levels.filter((n) => n > 1)) {
    const calls = Math.max(20, Math.ceil(options.concurrencyCalls / sessions));
    const connect = (url: string, token?: string) => connectLight(url, token, LIGHT_TRANSPORT);
    const gateway = await startSupergateway(registry, options.burnIn);
    const relays: FloorRelay[] = [];
    try {
      for (const kind of FLOORS) relays.push(await startFloor(registry, kind, bundles, options.burnIn));
      const onFloor = (kind: FloorKind): LevelTarget => {
        const relay = relays[FLOORS.indexOf(kind)]!;
        return { url: relay.url, proxies: Object.values(relay.proxies), connect };
      };
      const sides: Record<FloorSide, LevelTarget> = {
        switchyard: { url: `${stack.url}/servers/everything/mcp`, token: TOKENS.plain, proxies: [stack.worker.pid, stack.sidecar.pid], connect, settled: stack.sparesSettled },
        supergateway: { url: gateway.url, proxies: [gateway.process.pid], connect },
        'floor3-node': onFloor('floor3-node'),
        'floor3-deno': onFloor('floor3-deno'),
        floor4: onFloor('floor4'),
      };
      const { callsPerSession, runs } = await inTurnsOf(sides, ['switchyard', 'supergateway', ...FLOORS], sessions, calls, { tag: `floor${sessions}` });
      for (const side of Object.keys(sides) as FloorSide[]) {
        const row = { side, ...summarizeLevel(sessions, callsPerSession, runs[side]) };
        concurrency.push(row);
        const s = row.summary;
        log(`  ${side} ${sessions} sessions × ${callsPerSession} calls (light ${LIGHT_TRANSPORT} client): ${s.callsPerSec} calls/s, p50 ${s.p50} ms, p99 ${s.p99} ms, ${s.errors} errors, proxy CPU ${row.proxyCpuUsPerCall} µs/call, client CPU ${row.clientCpuUsPerCall} µs/call`);
      }
    } finally {
      for (const relay of relays) await relay.stop();
      await registry.stop(gateway.process);
    }
  }
  return { latency, lightClient, lightTransport: LIGHT_TRANSPORT, concurrency };
}

/** The light client's own CPU per call over fetch and node:http, in turns, on the cheapest relay. */
async function measureLightClient(registry: ProcessRegistry, bundles: { http: string; relay: string }, calls: number, burnInCalls: number, log: (line: string) => void): Promise<FloorResult['lightClient']> {
  const relay = await startFloor(registry, 'floor3-node', bundles, burnInCalls);
  try {
    const side = (transport: LightTransport): LevelTarget => ({ url: relay.url, proxies: Object.values(relay.proxies), connect: (url, token) => connectLight(url, token, transport) });
    // More calls than a latency row: the bench process's own background work (child output, GC) lands in these figures too.
    const total = Math.max(1_000, calls * 4);
    const { runs } = await inTurnsOf({ fetch: side('fetch'), http: side('http') }, ['fetch', 'http'], 1, total, { tag: 'light-client' });
    const out = {} as FloorResult['lightClient'];
    for (const transport of ['fetch', 'http'] as const) {
      const level = summarizeLevel(1, total, runs[transport]);
      out[transport] = { clientCpuUsPerCall: level.clientCpuUsPerCall, p50: level.summary.p50 };
      log(`  light client over ${transport}: ${level.clientCpuUsPerCall} µs CPU per call in the bench process (p50 ${level.summary.p50} ms, ${level.summary.errors} errors)`);
    }
    return out;
  } finally {
    await relay.stop();
  }
}
