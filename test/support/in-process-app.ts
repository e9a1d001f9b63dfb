/**
 * The worker app with an `InProcessRouter`, reached through `app.request` (no socket), and SDK
 * clients pointed at it. For route tests that need real MCP traffic but no processes.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { createApp } from '../../worker/app.ts';
import { sha256Hex } from '../../worker/auth/agent-auth.ts';
import { parseWorkerConfig, type WorkerConfig } from '../../worker/config/worker-config.ts';
import { InMemorySessionTable, type SessionEvents } from '../../worker/sessions/session-table.ts';
import type { WorkerAudit } from '../../worker/audit/worker-audit.ts';
import { hostCredential, workerHostEntry } from './configs.ts';
import type { InProcessRouter } from './in-process-router.ts';

export const BASE = 'http://localhost:8787';

export interface InProcessApp {
  app: ReturnType<typeof createApp>;
  config: WorkerConfig;
  sessions: InMemorySessionTable;
  fetch: (url: string | URL, init?: RequestInit) => Promise<Response>;
  /** A connected SDK client for `path` with `token`; closed by `close()`. */
  client(path: string, token: string, capabilities?: ClientCapabilities, headers?: Record<string, string>): Promise<Client>;
  close(): Promise<void>;
}

/**
 * Builds a config where each agent `name` has token `<name>-token`. Servers given by name are
 * bound to host "laptop"; give a record to choose their descriptors.
 */
export async function testConfig(
  agents: Array<{ name: string; servers: string[]; containment?: 'required' }>,
  servers: string[] | Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<WorkerConfig> {
  return parseWorkerConfig({
    agents: await Promise.all(agents.map(async (a) => ({
      name: a.name,
      'token-sha256': await sha256Hex(`${a.name}-token`),
      servers: a.servers,
      ...(a.containment !== undefined
        ? { 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': `sha256:${'0'.repeat(64)}`, containment: a.containment } }
        : {}),
    }))),
    hosts: [workerHostEntry(hostCredential('laptop'))],
    servers: Array.isArray(servers)
      ? Object.fromEntries(servers.map((s) => [s, { executor: { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } } }]))
      : Object.fromEntries(Object.entries(servers).map(([s, executor]) => [s, { executor }])),
    ...extra,
  }, { runtime: 'edge' });
}

/** `retryAfterMs`: the least time between lazy reconnects of an unavailable `/mcp` server; 0 unless given, so a test need not wait it out. */
export function startInProcessApp(config: WorkerConfig, router: InProcessRouter, options: { now?: () => number; audit?: WorkerAudit; retryAfterMs?: number; onSession?: SessionEvents } = {}): InProcessApp {
  const sessions = new InMemorySessionTable({ idleMs: config['session-idle-seconds'] * 1000, ...(options.now !== undefined ? { now: options.now } : {}), ...(options.onSession !== undefined ? { onSession: options.onSession } : {}) });
  const app = createApp({ config, router, sessions, retryAfterMs: options.retryAfterMs ?? 0, ...(options.audit !== undefined ? { audit: options.audit } : {}) });
  const fetch = async (url: string | URL, init?: RequestInit) => app.request(String(url), init);
  const clients: Client[] = [];
  return {
    app,
    config,
    sessions,
    fetch,
    async client(path, token, capabilities = {}, headers = {}) {
      const transport = new StreamableHTTPClientTransport(new URL(path, BASE), {
        fetch,
        requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
      });
      const client = new Client({ name: 'test-agent', version: '1.0.0' }, { capabilities });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.allSettled(clients.map(async (c) => {
        await (c.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
        await c.close();
      }));
      await sessions.closeAll();
      sessions.dispose();
    },
  };
}
