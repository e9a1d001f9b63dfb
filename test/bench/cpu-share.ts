/**
 * The `cpushare` section of `npm run bench`: one agent's servers spin on every core while another
 * agent's echo server answers sequential `tools/call`s over its stdio, as the sidecar talks to it.
 * Reported, alone and beside the spinning agent: the echo's latency, and the time a call that
 * takes 5 ms of CPU answers in (a server that parses, indexes or renders). The sidecar's process
 * executor launches both agents' servers three ways:
 * - **no cgroups:** the scheduler shares the CPU between threads, so the spinning agent's many
 *   threads take most of it (a sidecar that may not make cgroups);
 * - **a cgroup per server, no agent level:** shared between servers first, so an agent gets one
 *   share per server it runs;
 * - **a cgroup per server under its agent's** (the sidecar's way, `server-cgroups.ts`): shared
 *   between agents first, so the spinning agent gets one agent's share however many servers and
 *   threads it runs.
 * The bench process itself stands for the sidecar: it sits outside the servers' cgroups, as the
 * sidecar does. Needs root and a cpu controller (cgroups without a delegation); else skipped,
 * and the report says why.
 *
 * @module
 */
import { join } from 'node:path';
import { cpus } from 'node:os';
import { silentLogger } from '../../sidecar/log.ts';
import { ProcessExecutor, type ProcessHandle } from '../../sidecar/process/process-executor.ts';
import { ServerCgroups } from '../../sidecar/process/server-cgroups.ts';
import { REPO } from './processes.ts';

export type CpuShareVariant = 'no cgroups' | 'per server' | 'per agent';

export interface CpuShareRow {
  variant: CpuShareVariant;
  /** The echo's latency in ms with nothing else running, and beside the spinning agent. */
  alone: { p50: number; p90: number };
  contended: { p50: number; p90: number };
  /** The same of a call that takes `WORK_CPU_MS` of CPU. */
  workAlone: { p50: number; p90: number };
  workContended: { p50: number; p90: number };
}

export interface CpuShareResult {
  /** The spinning agent's servers, and busy loops in each. */
  hogServers: number;
  hogLoopsPerServer: number;
  calls: number;
  rows: CpuShareRow[];
  /** Why the section did not run. */
  skipped?: string;
}

const VARIANTS: readonly CpuShareVariant[] = ['no cgroups', 'per server', 'per agent'];

/** The CPU one call of the working server takes, in ms. */
const WORK_CPU_MS = 5;

/** A stdio server whose every request takes `WORK_CPU_MS` of its CPU before its answer (JSON-RPC lines, as MCP's stdio). */
const WORKER = `require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  const cpu = () => { const used = process.cpuUsage(); return (used.user + used.system) / 1000; };
  const until = cpu() + ${WORK_CPU_MS};
  while (cpu() < until);
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: {} }) + '\\n');
});`;

/** A server of the spinning agent: `loops` busy shells, waiting on its stdin as a stdio server does. */
const spinner = (loops: number) => `${Array.from({ length: loops }, () => 'sh -c "while :; do :; done" &').join(' ')} read line`;

export async function measureCpuShare(options: { calls: number; log: (line: string) => void }): Promise<CpuShareResult> {
  const hogServers = 4;
  const hogLoopsPerServer = Math.max(2, cpus().length);
  const base = { hogServers, hogLoopsPerServer, calls: options.calls, rows: [] as CpuShareRow[] };
  if (process.getuid?.() !== 0) return { ...base, skipped: 'needs root (cgroups without a delegation)' };
  const opened = ServerCgroups.open({ log: silentLogger });
  if (opened.cgroups === undefined || !opened.support.cpu) {
    opened.cgroups?.close();
    return { ...base, skipped: `no cpu controller for the servers' cgroups: ${opened.cgroups === undefined ? opened.problem : (opened.cpuProblem ?? 'not given')}` };
  }
  const cgroups = opened.cgroups;
  const rows: CpuShareRow[] = [];
  try {
    for (const variant of VARIANTS) {
      const executor = new ProcessExecutor({ logger: silentLogger, ...(variant === 'no cgroups' ? {} : { cgroups, treeLimits: { tasks: 0, memoryMib: 0, cpus: 0 } }) });
      const agentOf = (agent: string) => (variant === 'per agent' ? { agent } : {});
      const handles: ProcessHandle[] = [];
      try {
        const echo = await executor.launch({ command: process.execPath, args: [join(REPO, 'test', 'fixtures', 'echo-server.mjs')], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, policy: null, ...agentOf('alice') });
        handles.push(echo);
        const call = lineCaller(echo);
        await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
        echo.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
        const work = await executor.launch({ command: process.execPath, args: ['-e', WORKER], env: {}, policy: null, ...agentOf('alice') });
        handles.push(work);
        const worked = lineCaller(work);
        const timed = async (calls: number, once: (i: number) => Promise<unknown>) => {
          const times: number[] = [];
          for (let i = 0; i < calls + 20; i++) {
            const start = performance.now();
            await once(i);
            if (i >= 20) times.push(performance.now() - start);
          }
          return quantiles(times);
        };
        const echoes = () => timed(options.calls, (i) => call('tools/call', { name: 'echo', arguments: { message: `m${i}` } }));
        const works = () => timed(Math.ceil(options.calls / 5), () => worked('tools/call', {}));
        const [alone, workAlone] = [await echoes(), await works()];
        for (let i = 0; i < hogServers; i++) handles.push(await executor.launch({ command: '/bin/sh', args: ['-c', spinner(hogLoopsPerServer)], env: { PATH: '/usr/bin:/bin' }, policy: null, ...agentOf('hog') }));
        const [contended, workContended] = [await echoes(), await works()];
        rows.push({ variant, alone, contended, workAlone, workContended });
        options.log(`  ${variant}: echo alone p50 ${alone.p50} ms, p90 ${alone.p90}; beside the busy agent p50 ${contended.p50}, p90 ${contended.p90}. A ${WORK_CPU_MS} ms call alone p50 ${workAlone.p50} ms; beside it p50 ${workContended.p50}, p90 ${workContended.p90}`);
      } finally {
        await Promise.all(handles.map((handle) => handle.dispose(0)));
        await executor.disposeAll();
      }
    }
  } finally {
    cgroups.close();
  }
  return { ...base, rows };
}

/** Sends JSON-RPC requests as lines on a server's stdin and resolves each with its answer line. */
function lineCaller(handle: ProcessHandle): (method: string, params: unknown) => Promise<unknown> {
  let next = 1;
  let buffered = '';
  const waiting = new Map<number, (message: unknown) => void>();
  handle.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const message = JSON.parse(line) as { id?: number };
      if (typeof message.id === 'number') waiting.get(message.id)?.(message);
      if (typeof message.id === 'number') waiting.delete(message.id);
    }
  });
  return (method, params) =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      handle.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
}

function quantiles(values: number[]): { p50: number; p90: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100;
  return { p50: at(0.5), p90: at(0.9) };
}

export function renderCpuShare(result: CpuShareResult): string {
  const lines = ['### CPU share between agents (`cpushare`)', ''];
  if (result.skipped !== undefined) return [...lines, `Skipped: ${result.skipped}.`].join('\n');
  lines.push(
    `Alice's calls over her servers' stdio, in turn, alone and beside another agent's ${result.hogServers} servers of ${result.hogLoopsPerServer} busy loops each: an echo (${result.calls} calls) and a call that takes ${WORK_CPU_MS} ms of CPU (${Math.ceil(result.calls / 5)}), in ms:`,
    '',
    `| servers launched with | echo alone p50 / p90 | echo beside p50 / p90 | ${WORK_CPU_MS} ms call alone p50 / p90 | ${WORK_CPU_MS} ms call beside p50 / p90 | its p50 × |`,
    '|---|---|---|---|---|---|',
  );
  for (const row of result.rows) {
    lines.push(`| ${row.variant} | ${row.alone.p50} / ${row.alone.p90} | ${row.contended.p50} / ${row.contended.p90} | ${row.workAlone.p50} / ${row.workAlone.p90} | ${row.workContended.p50} / ${row.workContended.p90} | ${Math.round((row.workContended.p50 / row.workAlone.p50) * 100) / 100} |`);
  }
  return lines.join('\n');
}
