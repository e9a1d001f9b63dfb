/**
 * The worker's own request path, in one Deno process and without sockets: `fetch` of the
 * composed worker (Host/Origin guard, bearer auth, routing, sessions, the modern path, audit)
 * over a real `LinkEndpoint` to an in-process host end that answers every `tools/call` like
 * server-everything's echo, with the link features a sidecar announces (a modern request's
 * answer and close come back in one `channel-reply`, as from a real sidecar). No kernel, HTTP
 * parser or other process is in it, so it shows what the worker's JavaScript costs a call apart
 * from `Deno.serve` and the WebSocket.
 *
 *   deno run -A --config=deno.json test/bench/app-hot-path.ts [ROOT ...] [--calls 200] [--batches 40] [--only b,m,b8,m8]
 *
 * Each ROOT is a checkout whose worker is loaded (this one by default); with two, both run in
 * the same process and their batches alternate A B B A …, so load elsewhere on a busy machine
 * falls on both alike. Variants: (b) one legacy session on `/servers/echo/mcp`, (m) sequential
 * modern stateless requests, (b8) and (m8) eight at once. It prints, per variant, each root's
 * median CPU µs per call over the batches and, for two, the median of the batches' ratios B/A.
 *
 * @module
 */
type Message = { jsonrpc: '2.0'; id?: number | string; method?: string; params?: Record<string, unknown>; result?: unknown };
interface ChannelLike {
  onmessage?: (message: Message) => void;
  start(): Promise<void>;
  send(message: Message): Promise<void>;
  reply?(message: Message): Promise<void>;
}
type Fetch = (request: Request) => Promise<Response> | Response;
type Caller = (i: number) => Promise<void>;

const deno = (globalThis as unknown as { Deno: { args: string[]; exit(code: number): never } }).Deno;
const args = [...deno.args];
const option = (name: string, fallback: string) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args.splice(at, 2)[1]!;
};
const calls = Number(option('calls', '200'));
const batches = Number(option('batches', '40'));
const only = option('only', 'b,m,b8,m8').split(',');
const roots = (args.length > 0 ? args : [new URL('../../', import.meta.url).pathname]).map((path) => new URL(path.replace(/\/?$/, '/'), 'file:///'));
const cpuUsage = (globalThis as unknown as { process: { cpuUsage(): { user: number; system: number } } }).process.cpuUsage;
const TOKEN = 'bench-app-hot-path-token';
const HOST = 'bench-host';

/** The worker of the checkout at `root`, linked to an echoing host end in this process. */
async function workerAt(root: URL): Promise<{ fetch: Fetch; close(): Promise<void> }> {
  const load = (path: string) => import(new URL(path, root).href);
  const { composeWorker } = await load('worker/compose.ts');
  const { parseWorkerConfig } = await load('worker/config/worker-config.ts');
  const { LinkEndpoint } = await load('shared/link/link-endpoint.ts');
  const { createFrameSocketPair } = await load('shared/link/frame-socket.ts');
  const { sha256Hex } = await load('shared/credentials.ts');
  const { formatPublicKey } = await load('shared/link/link-identity.ts');
  const keys = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const config = parseWorkerConfig(
    {
      agents: [{ name: 'bench', 'token-sha256': await sha256Hex(TOKEN), servers: ['echo'], 'max-sessions': 64 }],
      hosts: [{ 'entity-id': HOST, 'public-key': formatPublicKey(new Uint8Array(await crypto.subtle.exportKey('raw', keys.publicKey))) }],
      servers: { echo: { executor: { type: 'user-computer-profile', 'entity-id': HOST, target: { type: 'local' } } } },
    },
    { runtime: 'deno' },
  );
  const worker = composeWorker({ config });
  // The host's end answers at once, as server-everything's echo would. A message that came right
  // behind its open (a modern request) is answered once the open's handler has returned, as a
  // real host's is: the link defers the open's ack to the channel's first frame out, and an answer
  // from inside the handler would leave the ack to its fallback timer. Two microtasks put it after
  // the link's own continuation of the handler (a timer would be clamped to 4 ms when nested).
  const [workerSocket, hostSocket] = createFrameSocketPair();
  new LinkEndpoint(hostSocket, {
    role: 'sidecar',
    onOpen: async (request: { connection?: { era?: string } }, channel: ChannelLike) => {
      // A modern request's channel carries one answer: the host sends it and the close in one
      // `channel-reply` where the worker asked (as the sidecar's modern channel does), so the
      // worker does not keep the channel for its fallback close (`HOST_CLOSE_WAIT_MS`), which
      // this loop, never yielding to timers, would not run.
      const modern = request.connection?.era === 'modern' && channel.reply !== undefined;
      const early: Array<() => void> = [];
      let opening = true;
      channel.onmessage = (message) => {
        if (message.id === undefined || message.method === undefined) return;
        const result = message.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'echo', version: '1' } }
          : { content: [{ type: 'text', text: `Echo: ${(message.params?.arguments as { message?: string } | undefined)?.message ?? ''}` }] };
        const answer = { jsonrpc: '2.0' as const, id: message.id, result };
        const reply = () => void (modern ? channel.reply!(answer) : channel.send(answer));
        if (opening) early.push(reply);
        else reply();
      };
      await channel.start();
      opening = false;
      for (const reply of early) queueMicrotask(() => queueMicrotask(reply));
    },
  });
  // What the sidecar announces when it dials (older checkouts: what they have).
  const features = (await load('shared/link/link-features.ts').catch(() => ({}))).LINK_FEATURES ?? [];
  const peerFeatures = new Set((features as string[]).filter((feature) => feature !== 'paced'));
  worker.registry.attach(HOST, new LinkEndpoint(workerSocket, { role: 'worker', peer: HOST, peerFeatures }));
  return { fetch: (request) => worker.fetch(request), close: () => worker.close() };
}

const URL_ = 'http://127.0.0.1:8787/servers/echo/mcp';
const base = { host: '127.0.0.1:8787', authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function post(fetch: Fetch, headers: Record<string, string>, body: unknown): Promise<Response> {
  const text = JSON.stringify(body);
  const response = await fetch(new Request(URL_, { method: 'POST', headers: { ...headers, 'content-length': String(text.length) }, body: text }));
  await response.text();
  return response;
}

async function legacyCaller(fetch: Fetch): Promise<Caller> {
  const init = await post(fetch, base, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  const session = init.headers.get('mcp-session-id');
  if (init.status !== 200 || session === null) throw new Error(`initialize answered ${init.status}`);
  const headers = { ...base, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
  await post(fetch, headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return async (i) => {
    const response = await post(fetch, headers, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'echo', arguments: { message: `bench ${i}` } } });
    if (response.status !== 200) throw new Error(`tools/call answered ${response.status}`);
  };
}

function modernCaller(fetch: Fetch): Caller {
  const headers = { ...base, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  };
  return async (i) => {
    const response = await post(fetch, headers, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'echo', arguments: { message: `bench ${i}` }, _meta: meta } });
    if (response.status !== 200) throw new Error(`modern tools/call answered ${response.status}`);
  };
}

const VARIANTS: Record<string, (fetch: Fetch) => Promise<Caller[]>> = {
  b: async (fetch) => [await legacyCaller(fetch)],
  m: async (fetch) => [modernCaller(fetch)],
  b8: (fetch) => Promise.all(Array.from({ length: 8 }, () => legacyCaller(fetch))),
  m8: async (fetch) => Array.from({ length: 8 }, () => modernCaller(fetch)),
};

/** CPU µs per call of one batch: `callers` calling at once, `calls` in all. */
async function batch(callers: readonly Caller[]): Promise<number> {
  const each = Math.ceil(calls / callers.length);
  const before = cpuUsage();
  await Promise.all(callers.map(async (caller) => {
    for (let i = 0; i < each; i++) await caller(i);
  }));
  const after = cpuUsage();
  return (after.user - before.user + after.system - before.system) / (each * callers.length);
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const r1 = (v: number) => Math.round(v * 10) / 10;

const workers = [];
for (const root of roots) workers.push(await workerAt(root));
for (const name of only) {
  const callers = await Promise.all(workers.map((worker) => VARIANTS[name]!(worker.fetch)));
  for (let w = 0; w < 5; w++) for (const set of callers) await batch(set); // warm-up: let the JIT settle
  const perBatch: number[][] = workers.map(() => []);
  for (let b = 0; b < batches; b++) {
    const order = workers.map((_, i) => i);
    if (b % 2 === 1) order.reverse();
    for (const i of order) perBatch[i]!.push(await batch(callers[i]!));
  }
  const line = perBatch.map((values, i) => `${String.fromCharCode(65 + i)} ${r1(median(values))}`).join(', ');
  const ratio = perBatch.length === 2 ? `; B/A median of ${batches} paired batches ${Math.round(median(perBatch[0]!.map((a, b) => perBatch[1]![b]! / a)) * 1000) / 1000}` : '';
  console.log(`(${name}) median CPU µs per call: ${line}${ratio}`);
}
for (const worker of workers) await worker.close();
deno.exit(0);
