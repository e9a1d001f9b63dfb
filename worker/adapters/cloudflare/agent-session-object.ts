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
 * The agent's `max-sessions` is held by its `AgentSlots` object (`agent-slots-object.ts`): this
 * object takes a slot there before opening its session and gives it back when the session ends.
 * Its event streams get keepalive comments, so a quiet GET stream outlives the edge's idle watchdog
 * (`sse-keepalive.ts`). A session opened with an OAuth access token ends with its grant: the edge
 * that revokes it tells the agent's `AgentSlots` object, which asks each of the agent's sessions'
 * objects to end if that grant opened it (`end-grant`); should that fail, the session still asks
 * at each sweep whether its grant stands, and ends within one (30 s at most).
 *
 * @module
 */
import { createApp } from '../../app.ts';
import type { WorkerLogger } from '../../log.ts';
import { ExecutorTargetRouter } from '../../routing/executor-target-router.ts';
import { limitReached } from '../../sessions/agent-limits.ts';
import type { SessionEnd } from '../../sessions/ended-sessions.ts';
import { InMemorySessionTable, type SessionEvents } from '../../sessions/session-table.ts';
import { AgentSlotsClient, EndGrant, endingGrantSessions, SLOT_END_GRANT_PATH, SLOT_END_IF_IDLE_PATH, SLOT_STATE_PATH, type SlotState } from './agent-slots-object.ts';
import type { AccessGrant } from '../../auth/oauth/grants.ts';
import { loadFromEnv, workersOAuth } from './cloudflare-env.ts';
import { DurableObjectHostLinkRegistry } from './durable-object-registry.ts';
import { sessionIdIn } from './session-id.ts';
import { grantStands } from '../../auth/oauth/grants.ts';
import { withSseKeepalive } from './sse-keepalive.ts';
import { drainUnreadBody } from './unread-body.ts';
import type { DurableObjectNamespace, DurableObjectState, SwitchyardEnv } from './workers-runtime.ts';

/**
 * The session table of one object, holding at most its one session. Its sweep stops once the
 * session is gone. Admission asks the agent's `AgentSlots` object (the limit holds across every
 * object and isolate), each sweep renews the session's slot, and the slot goes back when the
 * session closes.
 */
class ObjectSessionTable extends InMemorySessionTable {
  /** This object's id: the key of its slot. */
  readonly #key: string;
  readonly #slotsNamespace: DurableObjectNamespace;
  readonly #idleMs: number;
  readonly #log: WorkerLogger;
  readonly #waitUntil: (promise: Promise<unknown>) => void;
  /** Whether an OAuth grant still stands (the built-in server's state), when there is one. */
  readonly #grantStands: ((id: string) => Promise<boolean>) | undefined;
  /** The agent's slots, while this object holds one. */
  #slots: AgentSlotsClient | undefined;
  /** An admission or the session's opening is under way. */
  #opening = false;
  #released: Promise<void> = Promise.resolve();

  constructor(options: { key: string; slots: DurableObjectNamespace; idleMs: number; log: WorkerLogger; waitUntil: (promise: Promise<unknown>) => void; onSession: SessionEvents; grantStands?: (id: string) => Promise<boolean> }) {
    super({ idleMs: options.idleMs, log: options.log, onSession: options.onSession });
    this.#key = options.key;
    this.#slotsNamespace = options.slots;
    this.#idleMs = options.idleMs;
    this.#log = options.log;
    this.#waitUntil = options.waitUntil;
    this.#grantStands = options.grantStands;
  }

  override async admit(agent: string, limit: number): Promise<{ release(): void }> {
    const slots = new AgentSlotsClient(this.#slotsNamespace, agent);
    this.#opening = true;
    let admitted: 'admitted' | 'full';
    try {
      // A lease lasts one idle time: the sweep renews it four times or more within that.
      admitted = await slots.admit(this.#key, limit, this.#idleMs);
    } catch (error) {
      this.#opening = false;
      throw error;
    }
    if (admitted === 'full') {
      this.#opening = false;
      this.#log.warn('Agent session refused: limit reached', { agent, limit });
      throw limitReached(agent, limit);
    }
    this.#slots = slots;
    return {
      release: () => {
        this.#opening = false;
        if (this.size === 0) this.#giveBack();
      },
    };
  }

  override remove(id: string, end?: SessionEnd): void {
    // The end is kept so the agent's next request on the session is told why it ended, as on every runtime.
    super.remove(id, end);
    if (this.size > 0) return;
    this.dispose();
    this.#giveBack();
  }

  override async sweep(): Promise<number> {
    const ended = (await super.sweep()) + (await this.#endIfGrantEnded());
    const [info] = this.list();
    const slots = this.#slots;
    if (info === undefined || slots === undefined) return ended;
    await slots.renew(this.#key, info.lastSeen, this.get(info.id)!.inFlight, this.#idleMs).catch((error: unknown) => {
      this.#log.debug('Agent session slot not renewed', { error: error instanceof Error ? error.message : String(error) });
    });
    return ended;
  }

  override async endGrants(pick: (grant: AccessGrant) => boolean, why: string): Promise<number> {
    const ended = await super.endGrants(pick, why);
    // As `remove` does: the object, empty, gives its slot back and stops its sweep.
    if (ended > 0 && this.size === 0) {
      this.dispose();
      this.#giveBack();
    }
    return ended;
  }

  /** Ends the session if `ended` is the grant it was opened under, for the agent's slots object, which then frees its slot. */
  async endGrant(ended: EndGrant): Promise<SlotState> {
    const [info] = this.list();
    if (info === undefined || this.grantOf(info.id)?.id !== ended.grant) return this.slotState();
    this.#slots = undefined;
    await this.endGrants((grant) => grant.id === ended.grant, ended.why);
    return { ended: true };
  }

  /** Ends the session when the OAuth grant it was opened under no longer stands; 1 if it did. */
  async #endIfGrantEnded(): Promise<number> {
    const [info] = this.list();
    const grant = info === undefined ? undefined : this.grantOf(info.id);
    if (grant === undefined || this.#grantStands === undefined) return 0;
    // The state out of reach ends nothing: the next sweep asks again.
    if (await this.#grantStands(grant.id).catch(() => true)) return 0;
    return this.endGrants((g) => g.id === grant.id, 'its OAuth grant was revoked or has expired');
  }

  /** What this object holds, for the agent's slots object: a session being opened is busy. */
  slotState(): SlotState {
    const [info] = this.list();
    if (info !== undefined) return { lastSeen: info.lastSeen, inFlight: this.get(info.id)!.inFlight };
    return this.#opening ? { lastSeen: Date.now(), inFlight: 1 } : { gone: true };
  }

  /** Ends the session to make room for another of its agent, unless it is busy; its slot is the asker's to free. */
  async endIfIdle(): Promise<SlotState> {
    const state = this.slotState();
    const [info] = this.list();
    if (!('lastSeen' in state) || state.inFlight > 0 || info === undefined) return state;
    const session = this.get(info.id)!;
    this.#slots = undefined;
    this.remove(session.id, { because: 'limit-reached', why: `agent "${session.agent}" opened a session past its limit, and this was its least recently used idle one` });
    this.#log.info('Agent session ended to make room', { session: session.id, agent: session.agent, route: session.route });
    await session.close('limit');
    return { ended: true };
  }

  /** Resolves once a slot given back has reached the agent's slots object. */
  released(): Promise<void> {
    return this.#released;
  }

  #giveBack(): void {
    const slots = this.#slots;
    if (slots === undefined || this.#opening) return;
    this.#slots = undefined;
    this.#released = slots.release(this.#key).catch((error: unknown) => {
      // The lease lapses within one idle time anyway.
      this.#log.warn('Agent session slot not given back', { error: error instanceof Error ? error.message : String(error) });
    });
    this.#waitUntil(this.#released);
  }
}

export class AgentSession {
  readonly #state: DurableObjectState;
  readonly #env: SwitchyardEnv;
  #fetch: ((request: Request) => Response | Promise<Response>) | undefined;
  #sessions: ObjectSessionTable | undefined;

  constructor(state: DurableObjectState, env: SwitchyardEnv) {
    this.#state = state;
    this.#env = env;
  }

  async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    // From the agent's slots object only: the edge routes nothing but agent endpoints here.
    if (request.method === 'POST' && path === SLOT_STATE_PATH) return Response.json(this.#sessions?.slotState() ?? { gone: true });
    if (request.method === 'POST' && path === SLOT_END_IF_IDLE_PATH) return Response.json((await this.#sessions?.endIfIdle()) ?? { gone: true });
    if (request.method === 'POST' && path === SLOT_END_GRANT_PATH) {
      const ended = EndGrant.safeParse(await request.json().catch(() => null));
      if (!ended.success) return Response.json({ error: 'Invalid grant end' }, { status: 400 });
      return Response.json((await this.#sessions?.endGrant(ended.data)) ?? { gone: true });
    }
    if (this.#fetch === undefined) {
      const loaded = loadFromEnv(this.#env, 'agent-session');
      if (!loaded.ok) return loaded.response();
      const { config, log } = loaded;
      const audit = loaded.audit().audit;
      const runtime = workersOAuth(this.#env, config);
      const oauth = runtime.oauth === undefined ? {} : { oauth: endingGrantSessions(runtime.oauth, this.#env.AGENT_SLOTS, log) };
      const store = oauth.oauth?.store;
      const registry = new DurableObjectHostLinkRegistry(this.#env.HOST_LINK, { log });
      const sessions = new ObjectSessionTable({
        key: this.#state.id.toString(),
        slots: this.#env.AGENT_SLOTS,
        idleMs: config['session-idle-seconds'] * 1000,
        log,
        waitUntil: (promise) => this.#state.waitUntil(promise),
        onSession: { opened: (session) => audit.sessionOpened(session), ended: (session, because, ms) => audit.sessionEnded(session, because, ms) },
        ...(store !== undefined ? { grantStands: (id: string) => grantStands(store, id) } : {}),
      });
      this.#sessions = sessions;
      const app = createApp({ config, router: new ExecutorTargetRouter({ registry, log }), sessions, log, audit, ...oauth, newSessionId: () => sessionIdIn(this.#state.id) });
      this.#fetch = app.fetch;
    }
    const response = await this.#fetch(request);
    // The 404 of a session that is over needs no body; read anyway, it keeps the agent's connection (`unread-body.ts`).
    await drainUnreadBody(request);
    // A DELETE's answer waits for the slot it freed: the agent's next session may need it.
    await this.#sessions?.released();
    return withSseKeepalive(response);
  }
}
