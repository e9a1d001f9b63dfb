/**
 * The Switchyard stack under test, started the way users start it: the worker under the real
 * Deno binary through the production launcher (`cli/deno-worker-process.ts`, config file) and the
 * sidecar as a workstation installs it: `node sidecar.js sidecar --config-dir DIR`, the bundle
 * `npm run build` writes as `dist/sidecar.js` (built afresh into the scratch dir, so a concurrent
 * build is never disturbed and tsx's loader is not what is measured), linked over reverse HTTP on
 * 127.0.0.1, running server-everything from node_modules. Configs are written
 * by `test/support/configs.ts`, as for every test.
 *
 * Agents, so that no measurement opens servers it does not measure:
 * - `plain`: `everything` with no trust context (ordinary launch); `modern` the same for stateless
 *   requests;
 * - `echo`: `echo`, the SDK-free echo fixture, one light process per legacy session (the scale
 *   curve's 256 sessions);
 * - `boxed`: `everything` under the `bench-contained` profile (a read-write scratch dir, no
 *   network), so the sidecar launches it under bubblewrap;
 * - `counter`: `counted`, bound to a second host served by an in-process sidecar whose link
 *   endpoint counts frames (see `link-cost.ts`); the CLI sidecar never sees it.
 *
 * Every server the CLI sidecar spawns is adopted by the registry from its `Server spawned` log
 * line, so a crash of the sidecar cannot leave servers running.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DENO_WORKER_RUNTIME_FLAGS, startDenoWorker } from '../../cli/deno-worker-process.ts';
import { TrustProfileStore } from '../../sidecar/trust/profile-store.ts';
import { agentEntry, hostCredential, workerHostEntry, writeSidecarDir, writeWorkerConfig } from '../support/configs.ts';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { freePort } from '../support/processes.ts';
import { sidecarCommand } from '../support/sidecar-process.ts';
import { buildSidecarBundle } from './sidecar-bundle.ts';
import { DENO, REPO, type BenchProcess, type ProcessRegistry } from './processes.ts';

export const TOKENS = {
  plain: 'bench-plain-token-0001',
  modern: 'bench-modern-token-001',
  echo: 'bench-echo-token-00001',
  boxed: 'bench-boxed-token-0001',
  counter: 'bench-counter-token-01',
  demo: (i: number) => `bench-demo-token-${String(i).padStart(4, '0')}`,
  coldPlain: (i: number) => `bench-cold-plain-${String(i).padStart(4, '0')}`,
  coldBoxed: (i: number) => `bench-cold-boxed-${String(i).padStart(4, '0')}`,
} as const;
/** Agents `cold-plain-<i>` and `cold-boxed-<i>`: one session each, so the warm pool never serves a cold-start sample. */
export const COLD_AGENTS = 12;
/** Agents `demo-0` … that each use the three demo servers on `/mcp`: one per warm/cold sample. */
export const DEMO_AGENTS = 12;
export const DEMO_SERVERS = ['everything', 'filesystem', 'memory'] as const;
export const HOST = hostCredential('bench-host');
/** The most sessions one agent opens at once (the scale curve's 256, with room): its worker and sidecar limits. */
export const MAX_BENCH_SESSIONS = 512;
export const COUNTED_HOST = hostCredential('bench-counted');
const PROFILE = 'bench-contained';
/** The SDK-free stdio echo server (`test/fixtures/raw-echo-server.mjs`): a light process per session for the 256-session level. */
export const RAW_ECHO = fixtureServer('raw-echo-server.mjs');

export interface StackOptions {
  /** Extra flags for the sidecar's node (e.g. `--inspect=127.0.0.1:0` when profiling). */
  sidecarNodeFlags?: string[];
  /** Flags for `deno run` instead of the production launcher's (e.g. `--inspect=127.0.0.1:0`). */
  denoFlags?: string[];
  /** Extra environment for the sidecar. */
  sidecarEnv?: Record<string, string>;
  /** Extra sidecar.json keys (e.g. the warm pool's size). */
  sidecarConfig?: Record<string, unknown>;
  /** A sidecar bundle built beforehand (another commit's, to compare two), instead of building this tree's. */
  sidecarBundle?: string;
  /** Another checkout whose worker sources Deno runs (with `denoFlags`), to compare two workers; this tree's by default. */
  workerRoot?: string;
  /** More trust profiles in the sidecar dir, by reference (a floor that `sidecarConfig` names). */
  profiles?: Record<string, unknown>;
}

export interface Stack {
  url: string;
  dir: string;
  worker: BenchProcess;
  sidecar: BenchProcess;
  /** Pids of every server the CLI sidecar spawned, in order. */
  serverPids(): number[];
  /** The sidecar's `Warm instance ready` log lines so far (agent and server of each). */
  warmReady(): Array<{ agent: string; server: string }>;
  /**
   * Resolves once the warm pool has no spare starting and has stayed so past its refill pause: a
   * spare's start (a whole Node server's boot) during a timed loop would be charged to the calls.
   */
  sparesSettled(): Promise<void>;
  /** Removes the scratch dir now; the registry also does it once every process has stopped. */
  dispose(): void;
}

/** Writes the configs, starts Deno and the CLI sidecar, and waits until the sidecar has linked. */
export async function startStack(registry: ProcessRegistry, options: StackOptions = {}): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  registry.afterStop(() => rmSync(dir, { recursive: true, force: true }));
  const configDir = join(dir, 'sidecar');
  const scratch = join(dir, 'scratch');
  mkdirSync(scratch, { recursive: true });
  const profiles = {
    ...options.profiles,
    [PROFILE]: {
      description: 'Benchmark: a scratch dir read-write, no network',
      'filesystem-paths': [{ 'source-path': scratch, 'access-mode': 'read-write' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH', 'LANG'] },
    },
  };
  // The port is chosen up front so that the sidecar dir can be written before the worker starts.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const demo = {
    filesystem: { command: process.execPath, args: [`${REPO}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`, scratch] },
    memory: { command: process.execPath, args: [`${REPO}node_modules/@modelcontextprotocol/server-memory/dist/index.js`], env: { MEMORY_FILE_PATH: join(scratch, 'memory.jsonl') } },
  };
  writeSidecarDir(configDir, {
    worker: url,
    host: HOST,
    servers: { everything: everythingServer(), ...demo, counted: everythingServer(), echo: RAW_ECHO },
    profiles,
    // The warm pool as users get it (one instance per agent, server and revision), with room for
    // every agent the bench runs at once, unless the caller sizes it. The process limits are raised
    // past the largest level the bench opens for one agent (the defaults, 32 per agent and 64 in
    // all, would end sessions' servers mid-run and cap the pool).
    // No launch rate: the bench opens rounds of up to 256 sessions per agent on purpose, each a
    // launch. Not said to a bundle given from elsewhere (`sidecar-cpu.ts --bundles`): one built
    // before the rate existed refuses the key, and those runs open a few sessions.
    sidecar: {
      'warm-pool': { 'max-instances': 64 },
      limits: { 'server-processes-per-agent': MAX_BENCH_SESSIONS, 'server-processes': 2 * MAX_BENCH_SESSIONS, ...(options.sidecarBundle === undefined ? { 'server-launches-per-agent-per-minute': 0 } : {}) },
      ...options.sidecarConfig,
    },
  });
  const revision = (await new TrustProfileStore(join(configDir, 'trust-profiles')).load(PROFILE)).revision;

  const onHost = (entityId: string) => ({ executor: { type: 'user-computer-profile', 'entity-id': entityId, target: { type: 'local' } } });
  const workerConfig = writeWorkerConfig(dir, {
    agents: [
      { ...agentEntry({ name: 'plain', token: TOKENS.plain, servers: ['everything'] }), 'max-sessions': MAX_BENCH_SESSIONS },
      { ...agentEntry({ name: 'modern', token: TOKENS.modern, servers: ['everything'] }), 'max-sessions': MAX_BENCH_SESSIONS },
      { ...agentEntry({ name: 'echo', token: TOKENS.echo, servers: ['echo'] }), 'max-sessions': MAX_BENCH_SESSIONS },
      ...Array.from({ length: DEMO_AGENTS }, (_, i) => agentEntry({ name: `demo-${i}`, token: TOKENS.demo(i), servers: [...DEMO_SERVERS] })),
      agentEntry({
        name: 'boxed',
        token: TOKENS.boxed,
        servers: ['everything'],
        'trust-context': { 'trust-profile-ref': PROFILE, 'trust-profile-revision': revision, containment: 'required' },
      }),
      agentEntry({ name: 'counter', token: TOKENS.counter, servers: ['counted'] }),
      ...Array.from({ length: COLD_AGENTS }, (_, i) => [
        agentEntry({ name: `cold-plain-${i}`, token: TOKENS.coldPlain(i), servers: ['everything'] }),
        agentEntry({ name: `cold-boxed-${i}`, token: TOKENS.coldBoxed(i), servers: ['everything'], 'trust-context': { 'trust-profile-ref': PROFILE, 'trust-profile-revision': revision, containment: 'required' } }),
      ]).flat(),
    ],
    hosts: [workerHostEntry(HOST), workerHostEntry(COUNTED_HOST)],
    servers: { everything: onHost(HOST.entityId), echo: onHost(HOST.entityId), filesystem: onHost(HOST.entityId), memory: onHost(HOST.entityId), counted: onHost(COUNTED_HOST.entityId) },
  });

  // The worker logs at warn: per-session info lines are not what is being measured.
  const env = { SWITCHYARD_LOG_LEVEL: 'warn' };
  let worker: BenchProcess;
  if (options.denoFlags === undefined && options.workerRoot === undefined) {
    const deno = await startDenoWorker({ configFile: workerConfig, port, stderr: 'pipe', env });
    worker = registry.track('worker (deno)', deno.child);
  } else {
    // Profiling: the production launcher passes `--quiet`, which also hides the inspector's
    // "Debugger listening" line that profiling reads; so Deno is started here with the flags given.
    const root = options.workerRoot === undefined ? REPO : `${options.workerRoot.replace(/\/$/, '')}/`;
    worker = registry.spawn(
      'worker (deno)',
      DENO,
      ['run', ...DENO_WORKER_RUNTIME_FLAGS, ...(options.denoFlags ?? []), '--no-prompt', '--allow-net', '--allow-env', `--allow-read=${root},${realpathSync(`${root}node_modules`)},${workerConfig}`, `--config=${root}deno.json`, `${root}worker/adapters/deno/deno-worker.ts`],
      { SWITCHYARD_WORKER_CONFIG_FILE: workerConfig, HOST: '127.0.0.1', PORT: String(port), NO_COLOR: '1', ...env },
    );
    await worker.waitFor(/\{"event":"listening","url":"([^"]+)"\}/);
  }

  // Info level: `Server spawned` (with its pid) and `Linked to the worker` are info lines.
  const command = sidecarCommand(configDir, { logLevel: 'info' });
  const bundle = options.sidecarBundle ?? (await buildSidecarBundle(dir));
  const args = [...(options.sidecarNodeFlags ?? []), bundle, 'sidecar', '--config-dir', configDir];
  const sidecar = registry.spawn('sidecar (node)', command.command, args, { ...command.env, ...options.sidecarEnv });
  const pids: number[] = [];
  const warm: Array<{ agent: string; server: string }> = [];
  let sparesStarting = 0;
  let lastSpareChange = 0;
  let partial = '';
  sidecar.child.stderr!.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      // Every start and end of a spare says how many are starting now, across all keys.
      if (line.includes('"msg":"Warm ') && line.includes('"starting":')) {
        const starting = (JSON.parse(line) as { starting?: unknown }).starting;
        if (typeof starting === 'number') {
          sparesStarting = starting;
          lastSpareChange = Date.now();
        }
      }
      if (line.includes('"Warm instance ready"')) {
        const { agent, server } = JSON.parse(line) as { agent?: unknown; server?: unknown };
        if (typeof agent === 'string' && typeof server === 'string') warm.push({ agent, server });
      }
      if (!line.includes('"Server spawned"')) continue;
      const pid = (JSON.parse(line) as { pid?: unknown }).pid;
      if (typeof pid === 'number') {
        pids.push(pid);
        registry.adopt(pid);
      }
    }
  });
  await sidecar.waitFor(/"msg":"Linked to the worker"/);
  const sparesSettled = () => settleSpares(() => ({ starting: sparesStarting, lastChange: lastSpareChange }));
  return { url, dir, worker, sidecar, serverPids: () => [...pids], warmReady: () => [...warm], sparesSettled, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Past the warm pool's refill pause (`REFILL_QUIET_MS`, 250 ms) with room for a loaded box. */
const SPARES_QUIET_MS = 600;
const SPARES_WAIT_MS = 60_000;

/**
 * Polls (bench code, not a test) until no spare is starting and none started or finished for
 * `SPARES_QUIET_MS`: a refill waits for a pause after the last session opened, so "none starting"
 * alone could be read just before it begins. Gives up after `SPARES_WAIT_MS`, saying so.
 */
async function settleSpares(state: () => { starting: number; lastChange: number }): Promise<void> {
  const since = Date.now();
  const start = Date.now();
  for (;;) {
    const { starting, lastChange } = state();
    const now = Date.now();
    if (starting <= 0 && now - Math.max(lastChange, since) >= SPARES_QUIET_MS) return;
    if (now - start > SPARES_WAIT_MS) {
      process.stderr.write(`bench: warm spares still starting after ${SPARES_WAIT_MS} ms; timing anyway\n`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
