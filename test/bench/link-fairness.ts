/**
 * Link fairness: head-of-line blocking on the worker↔sidecar link. While agent `alice` floods
 * host A with large answers, how long does agent `bob`'s small echo call on the same host take?
 *
 * The real stack (`test/support/stack.ts`: the worker under Deno, the sidecar CLI), two servers on
 * host A both backed by `test/fixtures/bulk-server.mjs`: `bulk` for alice, `echo` for bob (a
 * server name of its own, so no per-server or per-agent cap of alice's touches bob). Every legacy
 * session runs a server process of its own either way; what the two agents share is the link.
 *
 * 1. Bob alone: one legacy session, sequential `echo` calls for `--baseline` seconds (after a
 *    short warm-up).
 * 2. Alice opens `--sessions` legacy sessions on `/servers/bulk/mcp`, each a loop of `big
 *    {bytes}` calls whose answers she reads to the end (`--unread`: she drops each call once its
 *    headers are in, closing the connection; such a call keeps its place under the request caps
 *    until its answer comes, so her 429s, counted as her errors, are expected there).
 * 3. Once her first answer is in, bob calls `echo` sequentially for `--seconds` while she floods;
 *    the flood ends only after bob's last call.
 *
 * Printed: bob's call latency (p50/p90/p99/max, ms) alone and under the flood, his errors, what
 * alice received in the window, the peak VmRSS of the worker and the sidecar in each phase
 * (sampled from /proc every 100 ms; VmHWM too), and this process's own event-loop delay (the
 * client shares the machine and its loop also reads alice's answers: a large value there is
 * client noise, not link delay). No assertions: speed is never asserted in this repo.
 *
 * Only `test/support/*` and `test/fixtures/bulk-server.mjs` are used (the HTTP client is in this
 * file), so the file can be copied into an older worktree and run there for an A/B comparison.
 *
 * Usage: node --import tsx test/bench/link-fairness.ts [--sessions 16] [--bytes 15000000] [--seconds 10]
 *        [--baseline 3] [--unread] [--link-rate 100mbit [--link-queue BYTES]] [--link-delay MS] [--json]
 *
 * `--link-rate` (root, `unshare` and `tc` with htb): the link crosses a shaped path, as from a
 * workstation's uplink, rather than loopback, where the machine's CPU, not the link, is what a
 * flood saturates (see above). `--link-delay`: the link goes through a relay in this process
 * that delays what it carries by half that each way, so the link's round trip is that much longer
 * (a worker far from the workstation); no root needed, and with or without `--link-rate`. The
 * relay holds what it delays without bound, as a long fat pipe would: only the link's own window
 * limits what is on its way. (netem would be the kernel's way; this machine's kernel has none.)
 * `--json`: one last line, `FAIRNESS_JSON {…}` (`FairnessRun`), for `npm run bench` (`fairness.ts`).
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { Agent, request, type ClientRequest } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

const { values: opts } = parseArgs({
  options: {
    sessions: { type: 'string', default: '16' },
    bytes: { type: 'string', default: '15000000' },
    seconds: { type: 'string', default: '10' },
    baseline: { type: 'string', default: '3' },
    unread: { type: 'boolean', default: false },
    'link-rate': { type: 'string' },
    'link-queue': { type: 'string', default: '375000' },
    'link-delay': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(opts.sessions);
const BYTES = Number(opts.bytes);
const SECONDS = Number(opts.seconds);
const BASELINE_SECONDS = Number(opts.baseline);
const UNREAD = opts.unread === true;
/** Port of the relay the sidecar dials with `--link-rate`: the one port the shaping matches. */
const LINK_PORT = 47001;

// `--link-rate`: the whole run inside a fresh network namespace (root), whose loopback shapes the
// link's host-to-worker direction (packets to the relay's port) to that rate, with a bottleneck
// queue of `--link-queue` bytes (30 ms at 100 Mbit/s), as a workstation's uplink would: the
// agents' own HTTP and the worker-to-host direction are not shaped.
const SHAPED = opts['link-rate'] !== undefined;
const DELAY_MS = opts['link-delay'] === undefined ? 0 : Number(opts['link-delay']);
if (!Number.isInteger(DELAY_MS) || DELAY_MS < 0) throw new Error(`--link-delay: expected milliseconds, such as 100, got ${opts['link-delay']}`);
if (SHAPED && process.env.SWITCHYARD_SHAPED_NS !== '1') {
  const rate = opts['link-rate']!;
  if (!/^\d+(?:\.\d+)?[kmg]?bit$/.test(rate)) throw new Error(`--link-rate: expected a tc rate such as 100mbit, got ${rate}`);
  const setup = [
    'ip link set lo up',
    'tc qdisc add dev lo root handle 1: htb default 10',
    'tc class add dev lo parent 1: classid 1:10 htb rate 100gbit',
    `tc class add dev lo parent 1: classid 1:20 htb rate ${rate} ceil ${rate}`,
    `tc qdisc add dev lo parent 1:20 handle 20: bfifo limit ${Number(opts['link-queue'])}`,
    `tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport ${LINK_PORT} 0xffff flowid 1:20`,
  ].join(' && ');
  const run = spawnSync('unshare', ['-n', '--', 'sh', '-c', `${setup} && exec "$0" "$@"`, process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, SWITCHYARD_SHAPED_NS: '1' },
  });
  process.exit(run.status ?? 1);
}

/**
 * A TCP relay to the worker's port: the sidecar's link goes through it, and only it is shaped
 * (on LINK_PORT) or delayed (`--link-delay`, half each way: timers of one length fire in the order
 * they were set, so the bytes keep theirs).
 */
function relayTo(workerPort: number): Promise<string> {
  const relay = createServer((from) => {
    const to = connect(workerPort, '127.0.0.1');
    if (DELAY_MS === 0) from.pipe(to).pipe(from);
    else {
      const half = DELAY_MS / 2;
      from.on('data', (chunk) => setTimeout(() => to.write(chunk), half));
      to.on('data', (chunk) => setTimeout(() => from.write(chunk), half));
      from.on('close', () => setTimeout(() => to.destroy(), half));
      to.on('close', () => setTimeout(() => from.destroy(), half));
    }
    from.on('error', () => to.destroy());
    to.on('error', () => from.destroy());
  });
  relays.push(relay);
  return new Promise((resolve, reject) => {
    relay.once('error', reject);
    relay.listen(SHAPED ? LINK_PORT : 0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(relay.address() as { port: number }).port}`));
  });
}
const relays: Server[] = [];
/** Longest wait for one call of bob's before it counts as an error. */
const BOB_TIMEOUT_MS = 30_000;
const PROTOCOL = '2025-06-18';

// ---- a minimal legacy Streamable HTTP client on node:http (no SDK: cheaper, better for timing) ----

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body, or only its first and last bytes when `count` is set. */
  body: string;
  bytes: number;
}

interface PostOptions {
  agent: Agent;
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
  /** Count the body instead of keeping it (alice's big answers); called per chunk. */
  count?: (bytes: number) => void;
  /** Drop the call once its headers are in (closes the connection); resolves with no body. */
  dropAfterHeaders?: boolean;
  /** Given the request, to destroy it from outside. */
  onRequest?: (req: ClientRequest) => void;
}

function send(url: string, o: PostOptions): Promise<Reply> {
  const text = o.body === undefined ? undefined : JSON.stringify(o.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: o.method ?? 'POST',
        agent: o.agent,
        headers: {
          accept: 'application/json, text/event-stream',
          ...(text !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) } : {}),
          ...o.headers,
        },
      },
      (res) => {
        if (o.dropAfterHeaders) {
          res.destroy();
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '', bytes: 0 });
          return;
        }
        const chunks: Buffer[] = [];
        let bytes = 0;
        let head = '';
        let tail = '';
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (o.count !== undefined) {
            o.count(c.length);
            if (head.length < 200) head += c.subarray(0, 200).toString('latin1');
            tail = (tail + c.subarray(Math.max(0, c.length - 200)).toString('latin1')).slice(-200);
          } else chunks.push(c);
        });
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('answer aborted')));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: o.count !== undefined ? `${head}…${tail}` : Buffer.concat(chunks).toString('utf8'), bytes }),
        );
      },
    );
    if (o.timeoutMs !== undefined) req.setTimeout(o.timeoutMs, () => req.destroy(new Error(`timed out after ${o.timeoutMs} ms`)));
    req.on('error', reject);
    o.onRequest?.(req);
    req.end(text);
  });
}

/** The JSON-RPC messages of a body (JSON or SSE). */
function messagesOf(reply: Reply): Array<Record<string, unknown>> {
  const sse = String(reply.headers['content-type'] ?? '').includes('text/event-stream');
  const texts = sse ? reply.body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()) : [reply.body.trim()];
  return texts.flatMap((t) => {
    try {
      const v: unknown = JSON.parse(t);
      return (Array.isArray(v) ? v : [v]) as Array<Record<string, unknown>>;
    } catch {
      return [];
    }
  });
}

class Session {
  #next = 1;
  private constructor(readonly url: string, readonly agent: Agent, readonly headers: Record<string, string>) {}

  static async open(url: string, token: string, agent: Agent): Promise<Session> {
    const init = await send(url, {
      agent,
      headers: { authorization: `Bearer ${token}` },
      body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'link-fairness', version: '1' } } },
      timeoutMs: 60_000,
    });
    const id = init.headers['mcp-session-id'];
    const result = messagesOf(init).find((m) => m.id === 0)?.result as { protocolVersion?: string } | undefined;
    if (init.status !== 200 || typeof id !== 'string' || result === undefined) throw new Error(`initialize on ${url} failed (${init.status}): ${init.body.slice(0, 300)}`);
    const session = new Session(url, agent, { authorization: `Bearer ${token}`, 'mcp-session-id': id, 'mcp-protocol-version': result.protocolVersion ?? PROTOCOL });
    await send(url, { agent, headers: session.headers, body: { jsonrpc: '2.0', method: 'notifications/initialized' }, timeoutMs: 10_000 });
    return session;
  }

  nextId(): number {
    return this.#next++;
  }

  call(id: number, name: string, args: Record<string, unknown>, extra: Omit<PostOptions, 'agent' | 'headers' | 'body'> = {}): Promise<Reply> {
    return send(this.url, { agent: this.agent, headers: this.headers, body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }, ...extra });
  }

  async close(): Promise<void> {
    await send(this.url, { agent: this.agent, method: 'DELETE', headers: this.headers, timeoutMs: 5_000 }).catch(() => undefined);
  }
}

// ---- measurement helpers ----

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

type Phase = 'alone' | 'flood';
const peaks: Record<Phase, { worker: number; sidecar: number }> = { alone: { worker: 0, sidecar: 0 }, flood: { worker: 0, sidecar: 0 } };
let phase: Phase | undefined;
function sampleRss(stack: Stack): void {
  if (phase === undefined) return;
  const w = statusKiB(stack.worker.pid, 'VmRSS');
  const s = statusKiB(stack.sidecar.pid, 'VmRSS');
  if (w !== undefined) peaks[phase].worker = Math.max(peaks[phase].worker, w);
  if (s !== undefined) peaks[phase].sidecar = Math.max(peaks[phase].sidecar, s);
}

interface BobRun {
  latencies: number[];
  errors: number;
  firstError?: string;
  lagP99: number;
  lagMax: number;
  seconds: number;
}

/** The histogram records whole timer periods: the lag is what exceeds the period. */
const LOOP_RESOLUTION_MS = 2;
const loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
loopDelay.enable();

async function bobLoop(session: Session, seconds: number): Promise<BobRun> {
  loopDelay.reset();
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  while (performance.now() < deadline) {
    const id = session.nextId();
    const t0 = performance.now();
    try {
      const reply = await session.call(id, 'echo', { message: `bob-${id}` }, { timeoutMs: BOB_TIMEOUT_MS });
      const ms = performance.now() - t0;
      const ok = reply.status === 200 && messagesOf(reply).some((m) => m.id === id && JSON.stringify(m.result ?? null).includes(`Echo: bob-${id}`));
      if (ok) latencies.push(ms);
      else {
        errors++;
        firstError ??= `HTTP ${reply.status}: ${reply.body.slice(0, 200)}`;
      }
    } catch (error) {
      errors++;
      firstError ??= String(error);
    }
  }
  return { latencies, errors, ...(firstError !== undefined ? { firstError } : {}), lagP99: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_RESOLUTION_MS), lagMax: Math.max(0, loopDelay.max / 1e6 - LOOP_RESOLUTION_MS), seconds: (performance.now() - start) / 1000 };
}

// ---- alice's flood ----

const flood = { running: false, bytes: 0, answers: 0, errors: 0, firstError: undefined as string | undefined, counting: false, inFlight: new Set<ClientRequest>() };

async function aliceLoop(session: Session): Promise<void> {
  while (flood.running) {
    const id = session.nextId();
    try {
      const reply = await session.call(id, 'big', { bytes: BYTES }, {
        count: (n) => {
          if (flood.counting) flood.bytes += n;
        },
        dropAfterHeaders: UNREAD,
        onRequest: (req) => {
          flood.inFlight.add(req);
          req.once('close', () => flood.inFlight.delete(req));
        },
      });
      const ok = reply.status === 200 && (UNREAD || (reply.bytes >= BYTES && !reply.body.includes('"error"')));
      if (!flood.running) return;
      if (ok) {
        if (flood.counting) flood.answers++;
      } else {
        if (flood.counting) flood.errors++;
        flood.firstError ??= `HTTP ${reply.status}: ${reply.body.slice(0, 200)}`;
        await new Promise((r) => setTimeout(r, 50));
      }
    } catch (error) {
      if (!flood.running) return;
      if (flood.counting) flood.errors++;
      flood.firstError ??= String(error);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function stopFlood(): void {
  flood.running = false;
  for (const req of flood.inFlight) req.destroy();
  flood.inFlight.clear();
}

// ---- cleanup, on every way out ----

let starting: Promise<Stack> | undefined;
let cleaning: Promise<void> | undefined;
const agents: Agent[] = [];
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    stopFlood();
    for (const a of agents) a.destroy();
    const stack = await starting?.catch(() => undefined);
    await stack?.stop();
    for (const relay of relays) relay.close();
  })();
  return cleaning;
}
let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (++signals > 1) process.exit(130);
    console.error(`\n${signal}: stopping the stack…`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ---- the run ----

const fmt = (n: number) => (Number.isNaN(n) ? '-' : n >= 100 ? n.toFixed(0) : n.toFixed(1));
const mib = (kib: number) => (kib / 1024).toFixed(0);

async function main(): Promise<void> {
  const worker: Record<string, unknown> = {};
  // Alice's sessions plus spare; the default (16 sessions per agent) would end her oldest idle one.
  if (SESSIONS > 16) worker['max-sessions-per-agent'] = SESSIONS + 2;
  if (SESSIONS > 200) worker['max-requests-per-agent'] = SESSIONS + 16;
  starting = startStack({
    servers: { bulk: fixtureServer('bulk-server.mjs'), echo: fixtureServer('bulk-server.mjs') },
    agents: [{ name: 'bob', servers: ['echo'] }],
    ...(Object.keys(worker).length > 0 ? { worker } : {}),
    ...(SHAPED || DELAY_MS > 0 ? { linkUrl: relayTo } : {}),
  });
  const stack = await starting;
  const sampler = setInterval(() => sampleRss(stack), 100);
  const bobAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const aliceAgent = new Agent({ keepAlive: true, maxSockets: SESSIONS * 2 + 4 });
  agents.push(bobAgent, aliceAgent);

  const bob = await Session.open(`${stack.url}/servers/echo/mcp`, stack.tokens.bob!, bobAgent);
  for (let i = 0; i < 20; i++) await bob.call(bob.nextId(), 'echo', { message: 'warm-up' });
  phase = 'alone';
  const alone = await bobLoop(bob, BASELINE_SECONDS);

  const alice = await Promise.all(Array.from({ length: SESSIONS }, () => Session.open(`${stack.url}/servers/bulk/mcp`, stack.tokens.alice!, aliceAgent)));
  phase = 'flood';
  flood.running = true;
  const floodWall = Date.now();
  const loops = alice.map((s) => aliceLoop(s));
  // Into the window once the flood is under way: her first answer in (or 10 s).
  const rampStart = performance.now();
  flood.counting = true;
  while (flood.answers === 0 && flood.errors === 0 && performance.now() - rampStart < 10_000) await new Promise((r) => setTimeout(r, 20));
  const ramp = (performance.now() - rampStart) / 1000;
  flood.bytes = 0;
  flood.answers = 0;
  flood.errors = 0;
  const windowStart = performance.now();
  const loaded = await bobLoop(bob, SECONDS);
  const windowSeconds = (performance.now() - windowStart) / 1000;
  const aliceBytes = flood.bytes;
  const aliceAnswers = flood.answers;
  const aliceErrors = flood.errors;
  sampleRss(stack);
  const hwm = { worker: statusKiB(stack.worker.pid, 'VmHWM') ?? 0, sidecar: statusKiB(stack.sidecar.pid, 'VmHWM') ?? 0 };
  clearInterval(sampler);
  stopFlood();
  await Promise.all(loops);
  await Promise.all([...alice, bob].map((s) => s.close()));

  /** Bob's calls in one phase: how many, their latency percentiles (ms) and errors. */
  const summary = (r: BobRun) => {
    const s = [...r.latencies].sort((a, b) => a - b);
    return { calls: r.latencies.length + r.errors, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), max: s.at(-1) ?? NaN, errors: r.errors };
  };
  const row = (name: string, r: BobRun) => {
    const b = summary(r);
    return `${name.padEnd(12)}${String(b.calls).padStart(7)}${fmt(b.p50).padStart(9)}${fmt(b.p90).padStart(9)}${fmt(b.p99).padStart(9)}${fmt(b.max).padStart(9)}${String(b.errors).padStart(8)}${`${fmt(r.lagP99)}/${fmt(r.lagMax)}`.padStart(16)}`;
  };
  const mb = aliceBytes / 1e6;
  console.log('');
  console.log(`link fairness: alice ${SESSIONS} legacy sessions × big ${BYTES} B (${UNREAD ? 'dropped after headers' : 'read to the end'}); bob sequential echo, alone ${BASELINE_SECONDS} s, under flood ${SECONDS} s (flood ramp ${ramp.toFixed(1)} s)${opts['link-rate'] !== undefined ? `; host-to-worker link shaped to ${opts['link-rate']}, ${opts['link-queue']} B queue` : ''}${opts['link-delay'] !== undefined ? `; link round trip +${opts['link-delay']} ms` : ''}`);
  console.log(`${'bob'.padEnd(12)}${'calls'.padStart(7)}${'p50 ms'.padStart(9)}${'p90 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}${'errors'.padStart(8)}${'client lag p99/max'.padStart(20)}`);
  console.log(row('alone', alone));
  console.log(row('under flood', loaded));
  for (const [name, r] of [['alone', alone], ['under flood', loaded]] as const) if (r.firstError !== undefined) console.log(`  bob's first error (${name}): ${r.firstError}`);
  console.log(`alice: ${mb.toFixed(1)} MB received in ${windowSeconds.toFixed(1)} s = ${(mb / windowSeconds).toFixed(1)} MB/s, ${aliceAnswers} answers, ${aliceErrors} errors${flood.firstError !== undefined ? ` (first: ${flood.firstError})` : ''}`);
  // Where bob's time went: each end's audit line holds how long the call took there (the host's:
  // from its request off the link to its answer onto it; the worker's: from its request in to its answer out).
  const bobCalls = (lines: { json: Record<string, unknown> }[]) =>
    lines
      .filter((l) => l.json.msg === 'audit' && l.json.agent === 'bob' && l.json.method === 'tools/call' && typeof l.json.time === 'string' && Date.parse(l.json.time) >= floodWall)
      .map((l) => Number(l.json.durationMs));
  const [onWorker, onHost] = [bobCalls(stack.worker.err.lines), bobCalls(stack.sidecar.err.lines)];
  const pct = (xs: number[], p: number) => fmt([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN);
  console.log(`bob under flood, by each end's audit line (ms, p50/p90/max): worker ${pct(onWorker, 50)}/${pct(onWorker, 90)}/${pct(onWorker, 100)} (${onWorker.length} calls); host ${pct(onHost, 50)}/${pct(onHost, 90)}/${pct(onHost, 100)} (${onHost.length} calls)`);
  console.log(`peak VmRSS MiB: worker alone ${mib(peaks.alone.worker)}, under flood ${mib(peaks.flood.worker)} (VmHWM ${mib(hwm.worker)}); sidecar alone ${mib(peaks.alone.sidecar)}, under flood ${mib(peaks.flood.sidecar)} (VmHWM ${mib(hwm.sidecar)})`);
  if (opts.json) {
    const run: FairnessRun = {
      bobAlone: summary(alone),
      bobUnderFlood: summary(loaded),
      aliceMBps: mb / windowSeconds,
      aliceAnswers,
      aliceErrors,
      peakRssMiB: { worker: peaks.flood.worker / 1024, sidecar: peaks.flood.sidecar / 1024 },
    };
    console.log(`${FAIRNESS_JSON} ${JSON.stringify(run)}`);
  }
}

export interface BobSummary {
  calls: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
}

/** What `--json` prints, after `FAIRNESS_JSON`: bob's echo alone and under alice's flood (ms), alice's throughput, and each process's peak RSS under the flood. */
export interface FairnessRun {
  bobAlone: BobSummary;
  bobUnderFlood: BobSummary;
  aliceMBps: number;
  aliceAnswers: number;
  aliceErrors: number;
  peakRssMiB: { worker: number; sidecar: number };
}
/** The prefix of `--json`'s line (`fairness.ts` reads it). */
const FAIRNESS_JSON = 'FAIRNESS_JSON';

let code = 0;
try {
  await main();
} catch (error) {
  // After a signal, what fails is the run the cleanup cut short.
  if (signals === 0) console.error(error);
  code = signals > 0 ? 130 : 1;
} finally {
  await cleanup();
}
process.exit(code);
