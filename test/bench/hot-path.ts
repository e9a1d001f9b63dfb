/**
 * Hot-path micro-benchmarks: Switchyard's own per-message code, with no process, socket or
 * kernel in between, so that a change of a few µs is visible even on a busy machine (the
 * end-to-end numbers of `run.ts` move by more than that with background load).
 *
 * - `link`: one echo round trip through the whole link mux and the sidecar's bridge, in one
 *   process: worker `LinkEndpoint` ⇄ frame socket pair ⇄ sidecar `LinkEndpoint` → `bridgeChannels`
 *   → a transport that answers like server-everything's `echo`. Covers link-endpoint,
 *   frame-reader, mcp-channel-client-transport, channel-transport, channel-bridge.
 *   Runs under Node (the sidecar's runtime).
 * - `passthrough`: one `tools/call` POST through `PassthroughSession.handle` (Switchyard's own
 *   `LegacyHttpEndpoint`, which answers the agent's HTTP; SSE answer read to the end) over an
 *   in-memory channel to the same echo answerer. Run it under Deno (the worker's runtime): `deno run -A test/bench/hot-path-main.ts`.
 *
 * Each is warmed up, then timed in several rounds; the minimum round is the least disturbed one.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { bridgeChannels } from '../../sidecar/host/channel-bridge.ts';
import { silentLogger } from '../../sidecar/log.ts';
import { silentWorkerLogger } from '../../worker/log.ts';
import { PassthroughSession } from '../../worker/passthrough/passthrough-session.ts';

export interface HotPathResult {
  /** Wall µs per round trip: best round and median round. */
  minUs: number;
  medianUs: number;
  /**
   * CPU µs (user + system) per round trip, best round: unlike wall time it does not grow while
   * other processes have the core, so it is the number to compare on a shared machine.
   */
  cpuMinUs: number;
  rounds: number;
  callsPerRound: number;
}

/** `process.cpuUsage` exists under Node and, through its Node compatibility, under Deno 2. */
const cpuUsage = (globalThis as unknown as { process: { cpuUsage(): { user: number; system: number } } }).process.cpuUsage;

/** An echo answer shaped like server-everything's. */
function answer(message: JSONRPCMessage): JSONRPCMessage | null {
  if (!('method' in message) || !('id' in message)) return null;
  if (message.method === 'initialize') {
    return { jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'echo', version: '1' } } };
  }
  const text = (message.params as { arguments?: { message?: string } } | undefined)?.arguments?.message ?? '';
  return { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: `Echo: ${text}` }] } };
}

/** A server transport that answers every request at once (on a microtask, like a medium). */
class EchoTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  async start(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    const reply = answer(message);
    if (reply !== null) queueMicrotask(() => this.onmessage?.(reply));
  }
  async close(): Promise<void> {
    this.onclose?.();
  }
}

/** Times `rounds` × `calls` sequential runs of `once` after `warmup` untimed ones. */
async function time(once: (i: number) => Promise<void>, calls: number, rounds: number, warmup: number): Promise<HotPathResult> {
  for (let i = 0; i < warmup; i++) await once(i);
  const perRound: number[] = [];
  const cpuPerRound: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const cpu0 = cpuUsage();
    const start = performance.now();
    for (let i = 0; i < calls; i++) await once(i);
    perRound.push(((performance.now() - start) * 1000) / calls);
    const cpu1 = cpuUsage();
    cpuPerRound.push((cpu1.user - cpu0.user + cpu1.system - cpu0.system) / calls);
  }
  perRound.sort((a, b) => a - b);
  const r2 = (v: number) => Math.round(v * 100) / 100;
  return { minUs: r2(perRound[0]!), medianUs: r2(perRound[Math.floor(rounds / 2)]!), cpuMinUs: r2(Math.min(...cpuPerRound)), rounds, callsPerRound: calls };
}

/** Worker channel → link → sidecar bridge → echo transport, and back. */
export async function linkRoundTrip(calls = 5_000, rounds = 11): Promise<HotPathResult> {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'bench' });
  const sidecar = new LinkEndpoint(sidecarSocket, {
    role: 'sidecar',
    onOpen: async (_request, channel) => {
      await bridgeChannels(channel, new EchoTransport(), { server: 'echo', log: silentLogger }).start();
    },
  });
  const channel = await worker.openChannel({ type: 'mcp' });
  const pending = new Map<number | string, () => void>();
  channel.onmessage = (message) => {
    if ('id' in message && message.id !== undefined) pending.get(message.id)?.();
  };
  await channel.start();
  const once = (i: number) =>
    new Promise<void>((resolve) => {
      pending.set(i, resolve);
      void channel.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { message: `bench ${i}` } } });
    }).then(() => void pending.delete(i));
  try {
    return await time(once, calls, rounds, 2_000);
  } finally {
    worker.close();
    sidecar.close();
  }
}

/** One `tools/call` POST through a `PassthroughSession`, SSE answer read to its end. */
export async function passthroughRoundTrip(calls = 2_000, rounds = 11): Promise<HotPathResult> {
  const [workerEnd, serverEnd] = createInMemoryChannelPair();
  serverEnd.onmessage = (message) => {
    const reply = answer(message);
    if (reply !== null) void serverEnd.send(reply);
  };
  await serverEnd.start();
  const session = new PassthroughSession({ id: 'bench-session', agent: 'bench', server: 'echo', channel: workerEnd, log: silentWorkerLogger, onClosed: () => {} });
  const url = 'http://127.0.0.1/servers/echo/mcp';
  const headers = (extra: Record<string, string> = {}) => ({ accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...extra });
  const post = async (body: unknown, extra?: Record<string, string>) => {
    const response = await session.handle(new Request(url, { method: 'POST', headers: headers(extra), body: JSON.stringify(body) }));
    await response.text();
    return response;
  };
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}`);
  const session_ = { 'mcp-session-id': 'bench-session', 'mcp-protocol-version': '2025-06-18' };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session_);
  const once = async (i: number) => {
    const response = await post({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'echo', arguments: { message: `bench ${i}` } } }, session_);
    if (response.status !== 200) throw new Error(`tools/call answered ${response.status}`);
  };
  try {
    return await time(once, calls, rounds, 1_000);
  } finally {
    await session.close();
    await workerEnd.close();
  }
}
