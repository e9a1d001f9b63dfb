/**
 * What the worker bundle costs a cold isolate, the cost its size stands for: a fresh Deno process
 * imports `dist/worker.js` (compiles it, evaluates its modules, builds the worker from a config)
 * and answers an agent's first request, a 2026-07-28 `server/discover` the worker answers itself.
 * Beside it, in turns, the same probe on a minimal Hono worker (`start/minimal-worker.ts`), whose
 * start is the runtime's own part. Both bundles are built here with `buildWorker`'s settings, to a
 * temporary folder, as `size.ts` builds its.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { DENO, REPO } from './processes.ts';
import { median, round } from './stats.ts';
import { agentEntry } from '../support/configs.ts';

export interface StartFigures {
  /** Import of the bundle: compile, evaluate, and for the worker, build it from its config. */
  importMs: number;
  /** The first request's answer, once imported. */
  firstAnswerMs: number;
  /** Import and first answer, per run (the median of the sums, not the sum of the medians). */
  totalMs: number;
}

export interface StartResult {
  runs: number;
  worker: StartFigures;
  floor: StartFigures;
  /** The worker's median total less the floor's: what Switchyard's code adds to a cold first answer. */
  overFloorMs: number;
}

/** The most the worker may add to a cold isolate's first answer: less than one agent ↔ edge round trip, so a cold start never costs an agent more than one. */
export const START_OVER_FLOOR_MS = 25;

const TOKEN = 'bench-start-probe';
const PROTOCOL = '2026-07-28';

/** The probe's request, as JSON for its argument: what an agent sends first on the modern era. */
export const FIRST_REQUEST = {
  url: 'http://127.0.0.1:8787/mcp',
  headers: {
    host: '127.0.0.1:8787',
    authorization: `Bearer ${TOKEN}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL,
    'mcp-method': 'server/discover',
  },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'server/discover',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': PROTOCOL, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench-start', version: '1' } } },
  }),
};

interface BuildModule {
  buildWorker(options: { minify?: boolean; outfile?: string; entry?: string }): Promise<unknown>;
}

interface ProbeLine {
  importMs: number;
  firstAnswerMs: number;
  status: number;
}

const run = promisify(execFile);

export async function measureWorkerStart(options: { runs: number; log?: (line: string) => void }): Promise<StartResult> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-start-'));
  try {
    const { buildWorker } = (await import(pathToFileURL(join(REPO, 'scripts', 'build.mjs')).href)) as BuildModule;
    const workerBundle = join(dir, 'worker.js');
    const floorBundle = join(dir, 'minimal-worker.js');
    await buildWorker({ minify: true, outfile: workerBundle });
    // With the worker's own build, so the two differ only in what they bundle.
    await buildWorker({ minify: true, outfile: floorBundle, entry: 'test/bench/start/minimal-worker.ts' });
    const config = join(dir, 'worker.json');
    // An agent with no servers: its discover is the worker's own answer, no upstream in it.
    writeFileSync(config, JSON.stringify({ agents: [agentEntry({ name: 'probe', token: TOKEN, servers: [] })], servers: {} }), { mode: 0o600 });
    // The config file alone: one inline in the bench's own environment would make two, which the worker refuses.
    const { SWITCHYARD_WORKER_CONFIG: _inline, ...env } = process.env;
    const probe = async (bundle: string): Promise<ProbeLine> => {
      const { stdout, stderr } = await run(DENO, ['run', '--unstable-no-legacy-abort', '--allow-read', '--allow-env', '--allow-net', join(REPO, 'test/bench/start/start-probe.ts'), pathToFileURL(bundle).href, JSON.stringify(FIRST_REQUEST)], {
        env: { ...env, SWITCHYARD_WORKER_CONFIG_FILE: config, NO_COLOR: '1' },
      });
      let line: ProbeLine;
      try {
        line = JSON.parse(stdout.trim().split('\n').at(-1)!) as ProbeLine;
      } catch {
        throw new Error(`Start probe of ${bundle} printed no result: ${stderr.trim().slice(-500) || 'nothing on stderr either'}`);
      }
      if (line.status !== 200) throw new Error(`Start probe of ${bundle} answered ${line.status}, not 200`);
      return line;
    };
    // One run of each first: Deno's module cache and the page cache start warm for both.
    await probe(workerBundle);
    await probe(floorBundle);
    const worker: ProbeLine[] = [];
    const floor: ProbeLine[] = [];
    for (let i = 0; i < options.runs; i++) {
      worker.push(await probe(workerBundle));
      floor.push(await probe(floorBundle));
    }
    const figures = (lines: ProbeLine[]): StartFigures => ({
      importMs: round(median(lines.map((l) => l.importMs)), 2),
      firstAnswerMs: round(median(lines.map((l) => l.firstAnswerMs)), 2),
      totalMs: round(median(lines.map((l) => l.importMs + l.firstAnswerMs)), 2),
    });
    const result = { runs: options.runs, worker: figures(worker), floor: figures(floor), overFloorMs: 0 };
    result.overFloorMs = round(result.worker.totalMs - result.floor.totalMs, 2);
    options.log?.(`  worker ${result.worker.totalMs} ms (import ${result.worker.importMs}, first answer ${result.worker.firstAnswerMs}); minimal Hono worker ${result.floor.totalMs} ms`);
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
