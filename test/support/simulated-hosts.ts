/**
 * A fleet of simulated hosts in this process: each is the sidecar's real link client
 * (`sidecar/link/link-client.ts`, the real key-pair handshake with its own Ed25519 key) whose
 * channel handler answers every request with the host's own entity id. One worker config names
 * every host, with one server per host (`srv-<i>` on `host-<i>`) and an agent that may use them
 * all, so an agent's answer says which host served it: a misrouted call cannot pass for a good one.
 *
 * Used by the scale test (test/cloudflare/) and by `npm run bench` (fleet), against workerd and
 * against the Deno worker alike.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelTransport } from '../../shared/channel-transport.ts';
import { LinkClient } from '../../sidecar/link/link-client.ts';
import { silentLogger } from '../../sidecar/log.ts';
import { modernPost } from '../modern/modern-client.ts';
import { agentEntry, hostCredential, hostSigner, randomCredential, tokenSha256, workerHostEntry, type HostCredential } from './configs.ts';

export interface Fleet {
  readonly size: number;
  readonly token: string;
  /** The worker config naming every host (and `admin-token-sha256`). */
  readonly config: Record<string, unknown>;
  readonly adminToken: string;
  entityId(i: number): string;
  server(i: number): string;
}

export function createFleet(size: number): Fleet & { hosts: HostCredential[] } {
  const hosts = Array.from({ length: size }, (_, i) => hostCredential(`host-${i}`));
  const token = randomCredential('fleet-agent');
  const adminToken = randomCredential('fleet-admin');
  const server = (i: number) => `srv-${i}`;
  const config = {
    agents: [agentEntry({ name: 'fleet', token, servers: hosts.map((_, i) => server(i)) })],
    hosts: hosts.map(workerHostEntry),
    servers: Object.fromEntries(hosts.map((h, i) => [server(i), { executor: { type: 'reverse-http', 'entity-id': h.entityId } }])),
    'admin-token-sha256': tokenSha256(adminToken),
  };
  return { size, token, adminToken, config, hosts, entityId: (i) => hosts[i]!.entityId, server };
}

/** Answers every request on the channel with the host's entity id, as a tool result. */
function answerWithIdentity(entityId: string) {
  return async (_request: unknown, channel: ChannelTransport): Promise<void> => {
    channel.onmessage = (message: JSONRPCMessage) => {
      if (!('method' in message) || !('id' in message)) return;
      void channel.send({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: entityId }] } } as JSONRPCMessage).catch(() => {});
    };
    await channel.start();
  };
}

export interface LinkedFleet {
  /** Milliseconds from `start()` to each host's first accepted link, in host order. */
  linkOpenMs: number[];
  /** Until every host linked. */
  allLinkedMs: number;
  stop(): Promise<void>;
}

/** Dials every host to `url` at once (as a fleet of sidecars after a worker restart does); resolves when all linked. */
export async function linkFleet(fleet: Fleet & { hosts: HostCredential[] }, url: string, options: { timeoutMs?: number } = {}): Promise<LinkedFleet> {
  const signers = await Promise.all(fleet.hosts.map(hostSigner));
  const started = performance.now();
  const linkOpenMs: number[] = new Array(fleet.size).fill(Number.NaN);
  const clients: LinkClient[] = [];
  const linked = fleet.hosts.map((host, i) => new Promise<void>((resolve) => {
    const client = new LinkClient({
      worker: url,
      entityId: host.entityId,
      key: { sign: signers[i]! },
      onOpen: answerWithIdentity(host.entityId),
      log: silentLogger,
      backoff: { firstMs: 200, capMs: 2_000 },
      onLinked: () => {
        if (Number.isNaN(linkOpenMs[i]!)) linkOpenMs[i] = performance.now() - started;
        resolve();
      },
    });
    clients.push(client);
    client.start();
  }));
  const stop = async () => {
    await Promise.all(clients.map((c) => c.stop()));
  };
  const timeoutMs = options.timeoutMs ?? 120_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Only ${linkOpenMs.filter((v) => !Number.isNaN(v)).length} of ${fleet.size} hosts linked within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.all(linked), timedOut]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return { linkOpenMs, allLinkedMs: performance.now() - started, stop };
}

export interface FleetCalls {
  calls: number;
  ok: number;
  /** Answered, but by another host than the one the server is bound to. */
  misrouted: number;
  /** Not answered with a result: an error, a non-200, a dropped connection. */
  lost: number;
  elapsedMs: number;
  callsPerSecond: number;
  /** The first few failures, for the report. */
  problems: string[];
}

/**
 * `rounds` modern tools/call requests to every host's server (`/servers/srv-<i>/mcp`), at most
 * `concurrency` in flight, in an order that visits hosts round-robin.
 */
export async function callFleet(fleet: Fleet, url: string, options: { rounds?: number; concurrency?: number } = {}): Promise<FleetCalls> {
  const rounds = options.rounds ?? 1;
  const total = fleet.size * rounds;
  let next = 0;
  const tally = { ok: 0, misrouted: 0, lost: 0, problems: [] as string[] };
  const started = performance.now();
  const worker = async () => {
    for (let n = next++; n < total; n = next++) {
      const i = n % fleet.size;
      try {
        const answer = await modernPost(`${url}/servers/${fleet.server(i)}/mcp`, fleet.token, 'tools/call', { name: 'whoami', arguments: {} });
        const text = answer.response.result?.content?.[0]?.text;
        if (answer.status === 200 && text === fleet.entityId(i)) tally.ok++;
        else if (answer.status === 200 && typeof text === 'string') {
          tally.misrouted++;
          if (tally.problems.length < 5) tally.problems.push(`${fleet.server(i)} answered by ${text}`);
        } else {
          tally.lost++;
          if (tally.problems.length < 5) tally.problems.push(`${fleet.server(i)}: ${answer.status} ${JSON.stringify(answer.response).slice(0, 200)}`);
        }
      } catch (error) {
        tally.lost++;
        if (tally.problems.length < 5) tally.problems.push(`${fleet.server(i)}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 16, total) }, worker));
  const elapsedMs = performance.now() - started;
  return { calls: total, ...tally, elapsedMs, callsPerSecond: total / (elapsedMs / 1000) };
}
