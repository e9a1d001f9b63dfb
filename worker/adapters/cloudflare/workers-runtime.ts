/**
 * The slice of the Cloudflare Workers runtime this adapter uses, typed here (as `deno-env.ts` does
 * for Deno) so `worker/` type-checks without `@cloudflare/workers-types` and the bundle imports no
 * `cloudflare:` module: a Durable Object is a plain class the runtime constructs with
 * `(state, env)`, and its hibernation handlers are methods found by name.
 *
 * @module
 */

/** A Workers WebSocket: the web one plus `accept()` and the hibernation extensions. */
export interface WorkersWebSocket {
  accept(): void;
  send(data: string | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: string | ArrayBuffer }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: 'error', listener: (event: unknown) => void): void;
  readonly readyState: number;
  /** Kept across hibernation (structured clone, at most 2 KiB). */
  serializeAttachment(value: unknown): void;
  deserializeAttachment(): unknown;
}

export interface DurableObjectId {
  toString(): string;
  equals(other: DurableObjectId): boolean;
}

export interface DurableObjectStub {
  fetch(input: Request | string, init?: RequestInit): Promise<Response>;
}

export interface DurableObjectNamespace {
  idFromName(name: string): DurableObjectId;
  /** Throws on a string that is not an id of this namespace. */
  idFromString(id: string): DurableObjectId;
  newUniqueId(): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub;
}

/** The key-value storage API of a Durable Object (what `OAuthState` and `AgentSlots` use). */
export interface DurableObjectStorage {
  get(key: string): Promise<unknown>;
  put(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<boolean>;
  list(options?: { prefix?: string }): Promise<Map<string, unknown>>;
}

export interface DurableObjectState {
  readonly id: DurableObjectId;
  readonly storage: DurableObjectStorage;
  acceptWebSocket(ws: WorkersWebSocket, tags?: string[]): void;
  getWebSockets(tag?: string): WorkersWebSocket[];
  setWebSocketAutoResponse(pair: unknown): void;
  getWebSocketAutoResponseTimestamp(ws: WorkersWebSocket): Date | null;
  waitUntil(promise: Promise<unknown>): void;
}

/** The worker's bindings, as `wrangler.jsonc` declares them. */
export interface SwitchyardEnv {
  /** The worker config as JSON text: a secret (`wrangler secret put`) or a var. */
  SWITCHYARD_WORKER_CONFIG?: string;
  /** debug, info (default), warn or error. */
  SWITCHYARD_LOG_LEVEL?: string;
  HOST_LINK: DurableObjectNamespace;
  AGENT_SESSION: DurableObjectNamespace;
  /** One per agent, `idFromName(agent name)`: its live sessions' slots (`agent-slots-object.ts`). */
  AGENT_SLOTS: DurableObjectNamespace;
  /** The built-in OAuth server's state (`oauth-state-object.ts`). */
  OAUTH_STATE: DurableObjectNamespace;
  /** The built-in OAuth server's keys, comma-separated, the sealing one first (`server-key.ts`): a secret; unset, the state makes and keeps its own. */
  SWITCHYARD_OAUTH_KEYS?: string;
}

interface WorkersGlobals {
  WebSocketPair: new () => Record<0 | 1, WorkersWebSocket>;
  WebSocketRequestResponsePair: new (request: string, response: string) => unknown;
}

const globals = globalThis as unknown as WorkersGlobals;

/** A connected pair: the first end goes back to the caller in a 101 response, the second is ours. */
export function newWebSocketPair(): { client: WorkersWebSocket; server: WorkersWebSocket } {
  const pair = new globals.WebSocketPair();
  return { client: pair[0], server: pair[1] };
}

export function autoResponse(request: string, response: string): unknown {
  return new globals.WebSocketRequestResponsePair(request, response);
}

/** The 101 answer handing `client` to the caller (a Workers-only `ResponseInit` field). */
export function upgradeResponse(client: WorkersWebSocket): Response {
  return new Response(null, { status: 101, webSocket: client } as ResponseInit);
}

/** The WebSocket of a 101 answer from a stub, or null when the callee answered otherwise. */
export function webSocketOf(response: Response): WorkersWebSocket | null {
  return (response as unknown as { webSocket?: WorkersWebSocket | null }).webSocket ?? null;
}
