/**
 * `AgentSession`: the Durable Object holding one legacy (session-based) agent session, on
 * `/servers/:name/mcp` or `/mcp`, as `cloudflare/agents`' `McpAgent` keeps one object per MCP
 * session. The edge creates it with `newUniqueId()` for an `initialize` and finds it again from the
 * session id, which names it (`session-id.ts`).
 *
 * Why an object per session rather than the host's object: an `/mcp` session spans several hosts,
 * so no host's object is its natural home, and one rule serves both endpoints; sessions of one
 * busy host do not queue behind each other in that host's single thread; and a host relinking
 * (its object restarted) costs a session only its channels, as on Deno.
 *
 * Inside runs the same app as every runtime (`createApp`: auth, Host/Origin, the passthrough and
 * aggregate routes, the in-memory session table with its idle sweep), with the registry of
 * `durable-object-registry.ts`: channels go to each host's object over relays. An expired or
 * closed session leaves the object empty; its sweep timer is stopped so the runtime can evict it.
 * Its event streams get keepalive comments, so a quiet GET stream outlives the edge's idle watchdog
 * (`sse-keepalive.ts`).
 *
 * @module
 */
import { createApp } from '../../app.ts';
import { ExecutorTargetRouter } from '../../routing/executor-target-router.ts';
import { InMemorySessionTable } from '../../sessions/session-table.ts';
import { loadFromEnv, workersOAuth } from './cloudflare-env.ts';
import { DurableObjectHostLinkRegistry } from './durable-object-registry.ts';
import { sessionIdIn } from './session-id.ts';
import { withSseKeepalive } from './sse-keepalive.ts';
import type { DurableObjectState, SwitchyardEnv } from './workers-runtime.ts';

/** The session table of one object: its sweep stops once the last session is gone. */
class ObjectSessionTable extends InMemorySessionTable {
  override remove(id: string): void {
    super.remove(id);
    if (this.size === 0) this.dispose();
  }
}

export class AgentSession {
  readonly #state: DurableObjectState;
  readonly #env: SwitchyardEnv;
  #fetch: ((request: Request) => Response | Promise<Response>) | undefined;

  constructor(state: DurableObjectState, env: SwitchyardEnv) {
    this.#state = state;
    this.#env = env;
  }

  async fetch(request: Request): Promise<Response> {
    if (this.#fetch === undefined) {
      const loaded = loadFromEnv(this.#env, 'agent-session');
      if (!loaded.ok) return loaded.response();
      const { config, log } = loaded;
      const registry = new DurableObjectHostLinkRegistry(this.#env.HOST_LINK, { log });
      const sessions = new ObjectSessionTable({ idleMs: config['session-idle-seconds'] * 1000, log });
      const app = createApp({ config, router: new ExecutorTargetRouter({ registry }), sessions, log, audit: loaded.audit().audit, ...workersOAuth(this.#env, config), newSessionId: () => sessionIdIn(this.#state.id) });
      this.#fetch = app.fetch;
    }
    return withSseKeepalive(await this.#fetch(request));
  }
}
