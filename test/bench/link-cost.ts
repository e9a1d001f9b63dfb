/**
 * Link cost: frames and bytes on the worker↔sidecar link per echo call.
 *
 * The CLI sidecar is a separate process the bench cannot look into, so this measurement uses a
 * second sidecar in the bench's own process, built by the same production composition
 * (`createSidecarComposition`) and linked to the same Deno worker over a real WebSocket as host
 * `bench-counted`. Its link endpoint's `onFrame` tap counts every frame both ways; the worker
 * end's frames are the same frames seen from the other side.
 *
 * Bytes are the UTF-8 payload of each frame; `wireBytes` adds the WebSocket frame header
 * (RFC 6455: 2, 4 or 10 bytes by length, plus the 4-byte mask on frames the sidecar sends, since
 * it is the WebSocket client). TCP/IP headers are not counted.
 *
 * @module
 */
import { createSidecarComposition, type SidecarComposition } from '../../sidecar/host/composition.ts';
import { silentLogger } from '../../sidecar/log.ts';
import type { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { connectHttp, echoLoop } from './client.ts';
import { sleep, type ProcessRegistry } from './processes.ts';
import { COUNTED_HOST, TOKENS, type Stack } from './stack.ts';
import { round } from './stats.ts';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { loadHostKey, type HostKey } from '../../sidecar/link/host-key.ts';

/** The counted host's key, written where only this in-process sidecar reads it. */
async function countedHostKey(dir: string): Promise<HostKey> {
  const path = join(dir, 'counted-host.key');
  writeFileSync(path, COUNTED_HOST.privateKeyPem, { mode: 0o600 });
  return loadHostKey(path);
}

export interface LinkCostResult {
  calls: number;
  /** Per echo call, both directions together, keepalives excluded. */
  framesPerCall: number;
  bytesPerCall: number;
  wireBytesPerCall: number;
  /** Per echo call and direction: worker→sidecar (request) and sidecar→worker (answer). */
  toSidecar: { frames: number; bytes: number };
  toWorker: { frames: number; bytes: number };
}

interface Counter {
  frames: number;
  bytes: number;
  wire: number;
}

export async function measureLinkCost(registry: ProcessRegistry, stack: Stack, options: { calls: number; log(line: string): void }): Promise<LinkCostResult> {
  const counts: Record<'in' | 'out', Counter> = { in: zero(), out: zero() };
  let linked: LinkEndpoint | null = null;
  const sidecar: SidecarComposition = createSidecarComposition({
    configDir: join(stack.dir, 'sidecar'),
    entityId: COUNTED_HOST.entityId,
    user: 'bench',
    worker: stack.url,
    key: await countedHostKey(stack.dir),
    log: silentLogger,
    trust: { allowUncontained: true },
    executor: { onSpawn: (attempt) => attempt.pid !== undefined && registry.adopt(attempt.pid) },
    link: {
      onLinked: (endpoint) => {
        linked = endpoint;
        endpoint.onFrame = (direction, text) => {
          if (text.includes('"type":"keepalive')) return;
          const bytes = Buffer.byteLength(text);
          const c = counts[direction];
          c.frames++;
          c.bytes += bytes;
          c.wire += bytes + wsHeader(bytes, direction === 'out');
        };
      },
    },
  });
  sidecar.start();
  try {
    const deadline = Date.now() + 15_000;
    while (linked === null && Date.now() < deadline) await sleep(20);
    if (linked === null) throw new Error('The in-process counting sidecar did not link to the worker');
    const agent = await connectHttp(`${stack.url}/servers/counted/mcp`, TOKENS.counter);
    try {
      await echoLoop(agent.client, 'echo', 0, 20, 'link');
      counts.in = zero();
      counts.out = zero();
      const timed = await echoLoop(agent.client, 'echo', options.calls, 0, 'link');
      const n = options.calls - timed.errors;
      const per = (v: number) => round(v / n, 2);
      const result: LinkCostResult = {
        calls: n,
        framesPerCall: per(counts.in.frames + counts.out.frames),
        bytesPerCall: per(counts.in.bytes + counts.out.bytes),
        wireBytesPerCall: per(counts.in.wire + counts.out.wire),
        toSidecar: { frames: per(counts.in.frames), bytes: per(counts.in.bytes) },
        toWorker: { frames: per(counts.out.frames), bytes: per(counts.out.bytes) },
      };
      options.log(`  ${result.framesPerCall} frames, ${result.bytesPerCall} payload bytes (${result.wireBytesPerCall} with WebSocket headers) per echo`);
      return result;
    } finally {
      await agent.close();
    }
  } finally {
    await sidecar.stop();
  }
}

function zero(): Counter {
  return { frames: 0, bytes: 0, wire: 0 };
}

/** RFC 6455 header size for a payload of `length` bytes; `masked` for client→server frames. */
export function wsHeader(length: number, masked: boolean): number {
  const base = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  return base + (masked ? 4 : 0);
}
