/**
 * The worker as Cloudflare runs it: the Workers bundle (`dist/cloudflare/worker.js`, built here by
 * the production build function into a scratch dir) under the real workerd binary, through
 * Miniflare, with the two Durable Object bindings of the shipped `wrangler.jsonc` and the config
 * as the `SWITCHYARD_WORKER_CONFIG` binding. It listens on a real `http://127.0.0.1:PORT`, so the
 * real sidecar CLI and SDK clients reach it as they would reach Cloudflare.
 *
 * `restart()` disposes the runtime (every Durable Object, socket and session ends) and starts it
 * again on the same port: what a deploy or a data-centre failover does to a live worker.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { Log, LogLevel, Miniflare } from 'miniflare';
// @ts-expect-error plain JS build script
import { buildCloudflareWorker } from '../../scripts/build.mjs';
// @ts-expect-error plain JS build script
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS } from '../../scripts/wrangler-template.mjs';
import { freePort } from './processes.ts';
import { TEST_SCRATCH_ENV } from '../global-setup.ts';

export interface WorkerdWorker {
  readonly url: string;
  readonly port: number;
  /** Lines the worker wrote (console output of every isolate and object), so far. */
  lines(): string[];
  /** Those of them workerd wrote to stderr: `console.warn` and `console.error`, where `console.log` goes to stdout. */
  errorLines(): string[];
  /** JSON log lines, parsed. */
  logs(): Array<Record<string, unknown>>;
  /** Asks the Durable Object `name` of `binding` (`idFromName`), as another object of the worker would. */
  objectFetch(binding: string, name: string, url: string, init?: RequestInit): Promise<Response>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface WorkerdWorkerOptions {
  port?: number;
  logLevel?: 'debug' | 'info' | 'warn';
  /** More text bindings (secrets and vars), e.g. `SWITCHYARD_OAUTH_KEYS`. */
  bindings?: Record<string, string>;
  /**
   * Durable Objects' storage that outlives an evicted object, as Cloudflare's does (Miniflare's own
   * files, in its temp dir): for a test of what an object keeps across hibernation. Off by default.
   */
  lastingStorage?: boolean;
}

let bundle: Promise<{ dir: string; scriptPath: string }> | undefined;

/** The bundle, built once per test process. */
function built(): Promise<{ dir: string; scriptPath: string }> {
  bundle ??= (async () => {
    // Under vitest, in the run's scratch dir, which its teardown removes (`global-setup.ts`):
    // vitest ends a file's process with a signal, so an `exit` handler never ran.
    const dir = mkdtempSync(join(process.env[TEST_SCRATCH_ENV] ?? tmpdir(), 'switchyard-cloudflare-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await buildCloudflareWorker({ minify: false, outdir: dir });
    return { dir, scriptPath: join(dir, 'worker.js') };
  })();
  return bundle;
}

/**
 * `make()` with the OS temp dir set to the run's scratch dir, under vitest. Miniflare takes its own
 * temp dir from `os.tmpdir()` as it is constructed, and removes it on `dispose()` without waiting,
 * or from an exit hook: a test file's process, ended by a signal, often did neither, and each run
 * left a few `miniflare-*` dirs in /tmp.
 */
function inScratchTmpDir<T>(make: () => T): T {
  const scratch = process.env[TEST_SCRATCH_ENV];
  if (scratch === undefined) return make();
  const before = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  try {
    return make();
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
}

export async function startWorkerdWorker(config: unknown, options: WorkerdWorkerOptions = {}): Promise<WorkerdWorker> {
  const { scriptPath } = await built();
  let port = options.port ?? (await freePort());
  const output: string[] = [];
  const errors: string[] = [];
  const read = (stream: Readable, also?: string[]) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      const lines = parts.filter((l) => l !== '');
      output.push(...lines);
      also?.push(...lines);
    });
  };
  const start = async () => {
    const mf = inScratchTmpDir(() => new Miniflare({
      modules: true,
      scriptPath,
      // The scratch dir is outside the cwd; workerd refuses module paths that climb out of it.
      modulesRoot: dirname(scriptPath),
      compatibilityDate: COMPATIBILITY_DATE,
      compatibilityFlags: COMPATIBILITY_FLAGS,
      durableObjects: {
        HOST_LINK: 'HostLink',
        AGENT_SESSION: 'AgentSession',
        OAUTH_STATE: 'OAuthState',
        // Kept in memory while the runtime runs: in-memory storage goes with an evicted object,
        // where Cloudflare's storage, as the agent's session leases need, outlives it.
        AGENT_SLOTS: { className: 'AgentSlots', unsafePreventEviction: true },
      },
      // In memory, as the objects keep nothing on disk (AgentSlots aside, see above): locally each
      // object's SQLite file would otherwise be created on its first request, which dominates
      // linking a large fleet.
      unsafeEphemeralDurableObjects: options.lastingStorage !== true,
      // No config at all (`undefined`): what a worker gets before its secret is put.
      bindings: { ...(config === undefined ? {} : { SWITCHYARD_WORKER_CONFIG: JSON.stringify(config) }), SWITCHYARD_LOG_LEVEL: options.logLevel ?? 'info', ...options.bindings },
      host: '127.0.0.1',
      // No request.cf lookup: it would dial workers.cloudflare.com.
      cf: false,
      port,
      log: new Log(LogLevel.WARN),
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        read(stdout);
        read(stderr, errors);
      },
    }));
    try {
      await mf.ready;
    } catch (error) {
      await mf.dispose().catch(() => {});
      throw new Error(`workerd did not start: ${error instanceof Error ? error.message : String(error)}\n${output.slice(-40).join('\n')}`);
    }
    return mf;
  };
  // A port found free may be taken by another test's process before workerd binds it: a port of
  // the test's own choosing is tried again with another (a pinned one is the caller's to keep).
  let mf!: Awaited<ReturnType<typeof start>>;
  for (let attempt = 1; ; attempt++) {
    try {
      mf = await start();
      break;
    } catch (error) {
      if (options.port !== undefined || attempt === 3 || !String(error).includes('Address already in use')) throw error;
      port = await freePort();
    }
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    lines: () => [...output],
    errorLines: () => [...errors],
    logs: () => output.flatMap((line) => {
      const json = line.indexOf('{');
      if (json === -1) return [];
      try {
        return [JSON.parse(line.slice(json)) as Record<string, unknown>];
      } catch {
        return [];
      }
    }),
    async objectFetch(binding, name, url, init) {
      // Typed by hand: miniflare's own types need @cloudflare/workers-types.
      type Namespace = { idFromName(name: string): unknown; get(id: unknown): { fetch(url: string, init?: unknown): Promise<{ status: number; headers: Iterable<[string, string]>; text(): Promise<string> }> } };
      const namespace = (await mf.getDurableObjectNamespace(binding)) as unknown as Namespace;
      const response = await namespace.get(namespace.idFromName(name)).fetch(url, init);
      return new Response(await response.text(), { status: response.status, headers: [...response.headers] });
    },
    async restart() {
      await mf.dispose();
      mf = await start();
    },
    stop: () => mf.dispose(),
  };
}
