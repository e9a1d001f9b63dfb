/**
 * Echo round trip, variant by variant: one agent session, `warmup` untimed calls, then `calls`
 * sequential timed calls of server-everything's `echo`, each variant alone on the machine
 * (the reference gateways are started just before their turn and stopped right after).
 *
 * (a) direct stdio — no proxy, the floor;
 * (b) Switchyard `/servers/everything/mcp` — worker under Deno, link, CLI sidecar, ordinary launch;
 * (c) the same, contained — the `boxed` agent's profile puts the server under bubblewrap;
 * (d) Switchyard `/mcp` — the aggregate, tool `everything__echo`;
 * (e) supergateway `--stateful`; (f) mcp-proxy;
 * (m) Switchyard `/servers/everything/mcp` for a modern (2026-07-28) agent: no session, each echo
 *     one stateless POST, served by the host's legacy instance for that agent.
 *
 * @module
 */
import { connectHttp, connectStdio, echoLoop, modernAgent, type Agent, type Timed } from './client.ts';
import { startMcpProxy, startSupergateway, type Gateway } from './gateways.ts';
import { cpuMs, descendants, type ProcessRegistry } from './processes.ts';
import type { Stack } from './stack.ts';
import { TOKENS } from './stack.ts';
import { mergeParallel, summarize, type LatencySummary } from './stats.ts';

export type VariantId = 'a' | 'b' | 'm' | 'c' | 'd' | 'e' | 'f';

export interface VariantResult<Id extends string = VariantId> {
  id: Id;
  label: string;
  summary: LatencySummary;
  /**
   * CPU time per call in µs, by process role: `proxy` (worker + sidecar, or the gateway), each
   * proxy process by name, `server` (with its descendants, e.g. under bwrap) and `client` (the
   * bench process running the SDK client). Immune to other load on the machine, unlike latency.
   */
  cpuUsPerCall: Record<string, number>;
}

export interface Opened {
  agent: Agent;
  /** The proxy processes in front of the server, by name (none for direct stdio). */
  proxies: Record<string, number>;
  /**
   * The server process(es) this session may talk to: for Switchyard every server the sidecar runs,
   * since a session takes a warm spare started earlier (idle spares cost nothing while timed).
   */
  servers(): number[];
  /** Resolves once the gateway's background work for this open (warm spares) is done. */
  settled?(): Promise<void>;
  done(): Promise<void>;
}

export interface Variant<Id extends string = VariantId> {
  id: Id;
  label: string;
  tool: string;
  /** Starts whatever the variant needs and connects one agent; `done` stops it again. */
  open(): Promise<Opened>;
}

/** The variants; a gateway of its own (e, f) is burnt in with `burnInCalls` at each start (`burn-in.ts`). */
export function variants(registry: ProcessRegistry, stack: Stack, burnInCalls: number): Variant[] {
  const viaStack = (path: string, token: string) => async (): Promise<Opened> => {
    const agent = await connectHttp(`${stack.url}${path}`, token);
    return { agent, proxies: { worker: stack.worker.pid, sidecar: stack.sidecar.pid }, servers: () => stack.serverPids(), settled: stack.sparesSettled, done: async () => {} };
  };
  const viaGateway = (start: (r: ProcessRegistry, burnInCalls: number) => Promise<Gateway>) => async (): Promise<Opened> => {
    const gateway = await start(registry, burnInCalls);
    const agent = await connectHttp(gateway.url);
    return { agent, proxies: { gateway: gateway.process.pid }, servers: () => descendants(gateway.process.pid), done: () => registry.stop(gateway.process) };
  };
  const modern = async (): Promise<Opened> => {
    const agent = modernAgent(`${stack.url}/servers/everything/mcp`, TOKENS.modern);
    return { agent, proxies: { worker: stack.worker.pid, sidecar: stack.sidecar.pid }, servers: () => stack.serverPids(), settled: stack.sparesSettled, done: async () => {} };
  };
  const direct = async (): Promise<Opened> => {
    const agent = await connectStdio();
    return { agent, proxies: {}, servers: () => (agent.serverPid === undefined ? [] : [agent.serverPid]), done: async () => {} };
  };
  return [
    { id: 'a', label: 'direct stdio (SDK client spawns the server)', tool: 'echo', open: direct },
    { id: 'b', label: 'Switchyard /servers/everything/mcp', tool: 'echo', open: viaStack('/servers/everything/mcp', TOKENS.plain) },
    { id: 'm', label: 'Switchyard /servers/everything/mcp, modern stateless request', tool: 'echo', open: modern },
    { id: 'c', label: 'Switchyard /servers/everything/mcp, contained (bwrap)', tool: 'echo', open: viaStack('/servers/everything/mcp', TOKENS.boxed) },
    { id: 'd', label: 'Switchyard /mcp (aggregate)', tool: 'everything__echo', open: viaStack('/mcp', TOKENS.plain) },
    { id: 'e', label: 'supergateway --stateful (streamableHttp)', tool: 'echo', open: viaGateway(startSupergateway) },
    { id: 'f', label: 'mcp-proxy (--server stream)', tool: 'echo', open: viaGateway(startMcpProxy) },
  ];
}

/**
 * Runs every selected variant `rounds` times, round-robin (a b c … a b c …), and pools each
 * variant's calls and CPU over its rounds: on a shared machine load comes and goes, and
 * round-robin spreads it over all variants instead of letting it land on whichever ran then.
 */
export async function measureLatency(
  registry: ProcessRegistry,
  stack: Stack,
  options: { calls: number; warmup: number; burnIn: number; rounds: number; only?: readonly VariantId[]; log(line: string): void },
): Promise<VariantResult[]> {
  const selected = variants(registry, stack, options.burnIn).filter((v) => options.only === undefined || options.only.includes(v.id));
  return runVariants(selected, options);
}

/**
 * The loop behind `measureLatency`: each variant opened, warmed up, timed and closed, `rounds`
 * times, pooled per variant. `backAndForth` runs every other round in reverse (a b c c b a), so that
 * a drift in the machine's load over the run falls on every variant alike.
 */
export async function runVariants<Id extends string>(
  selected: ReadonlyArray<Variant<Id>>,
  options: { calls: number; warmup: number; rounds: number; backAndForth?: boolean; log(line: string): void },
): Promise<Array<VariantResult<Id>>> {
  const pooled = new Map<Id, { loops: Timed[]; cpuMs: Record<string, number> }>();
  for (let round = 0; round < options.rounds; round++) {
    for (const variant of options.backAndForth === true && round % 2 === 1 ? [...selected].reverse() : selected) {
      const opened = await variant.open();
      try {
        await echoLoop(opened.agent, variant.tool, 0, options.warmup, `variant ${variant.id} warmup`);
        await opened.settled?.();
        const before = cpuSnapshot(opened);
        const timed = await echoLoop(opened.agent, variant.tool, options.calls, 0, `variant ${variant.id}`);
        const after = cpuSnapshot(opened);
        const entry = pooled.get(variant.id) ?? { loops: [], cpuMs: {} };
        entry.loops.push(timed);
        for (const k of Object.keys(after)) entry.cpuMs[k] = (entry.cpuMs[k] ?? 0) + after[k]! - (before[k] ?? 0);
        pooled.set(variant.id, entry);
      } finally {
        await opened.agent.close();
        await opened.done();
      }
    }
  }
  return selected.map((variant) => {
    const { loops, cpuMs } = pooled.get(variant.id)!;
    const summary = summarize(mergeSequential(loops));
    const cpuUsPerCall = Object.fromEntries(Object.entries(cpuMs).map(([k, ms]) => [k, Math.round((ms * 1000) / Math.max(1, summary.calls))]));
    options.log(
      `  (${variant.id}) ${variant.label}: p50 ${summary.p50} ms, p99 ${summary.p99} ms, ${summary.callsPerSec} calls/s, ${summary.errors} errors; ` +
        `CPU µs/call ${JSON.stringify(cpuUsPerCall)}`,
    );
    return { id: variant.id, label: variant.label, summary, cpuUsPerCall };
  });
}

/** Loops that ran one after another, as one: latencies pooled, wall times added. */
function mergeSequential(loops: readonly Timed[]): Timed {
  return { ...mergeParallel(loops, 0), wallMs: loops.reduce((sum, l) => sum + l.wallMs, 0) };
}

/** CPU ms used so far by each role of an opened variant (servers with their descendants). */
function cpuSnapshot(opened: Opened): Record<string, number> {
  const tree = (pid: number) => [pid, ...descendants(pid)].reduce((sum, p) => sum + (cpuMs(p) ?? 0), 0);
  const proxies = Object.fromEntries(Object.entries(opened.proxies).map(([name, pid]) => [name, cpuMs(pid) ?? 0]));
  const usage = process.cpuUsage();
  return {
    proxy: Object.values(proxies).reduce((a, b) => a + b, 0),
    ...proxies,
    server: opened.servers().reduce((sum, pid) => sum + tree(pid), 0),
    client: (usage.user + usage.system) / 1000,
  };
}
