/**
 * Real processes for end-to-end tests: the worker under the real Deno binary, server-everything
 * in Streamable HTTP mode, and (once it exists) a sidecar under Node. Every process started here
 * is registered in a `ProcessSet`; `stopAll()` ends each one (SIGTERM, then SIGKILL) and waits for
 * its exit, so a test file leaves nothing running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, isAlive } from './process-probes.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

export { freePort, isAlive };

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const DENO = `${REPO}node_modules/deno/deno`;
export const EVERYTHING = `${REPO}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;

const STOP_GRACE_MS = 5_000;
const START_TIMEOUT_MS = 30_000;

export interface RunningProcess {
  child: ChildProcess;
  /** Everything written so far, for assertions and failure messages. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | string>;
  stop(): Promise<void>;
}

/** Every process a test file started; `stopAll` in `afterAll`/`afterEach`. */
export class ProcessSet {
  readonly #running = new Set<RunningProcess>();

  spawn(command: string, args: string[], env: Record<string, string> = {}): RunningProcess {
    const child = spawn(command, args, { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    const running: RunningProcess = {
      child,
      stdout: () => out,
      stderr: () => err,
      exited,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await exited;
          clearTimeout(timer);
        }
        this.#running.delete(running);
      },
    };
    this.#running.add(running);
    return running;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#running].map((p) => p.stop()));
  }
}

/** Resolves when `read()` matches `pattern`; rejects if the process exits or time runs out first. */
export async function waitForOutput(proc: RunningProcess, read: () => string, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  for (;;) {
    const match = read().match(pattern);
    if (match !== null) return match;
    if (exited || Date.now() > deadline) {
      throw new Error(`${what} did not start: ${exited ? 'it exited' : 'timed out'}\nstdout:\n${proc.stdout()}\nstderr:\n${proc.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}


export interface DenoWorker {
  url: string;
  process: RunningProcess;
}

/** The worker under the real Deno binary, config passed inline, on a free port of 127.0.0.1. */
export async function startDenoWorker(procs: ProcessSet, config: unknown, env: Record<string, string> = {}): Promise<DenoWorker> {
  const proc = procs.spawn(DENO, ['run', '--allow-net', '--allow-read', '--allow-env', 'worker/adapters/deno.ts'], {
    SWITCHYARD_WORKER_CONFIG: JSON.stringify(config),
    HOST: '127.0.0.1',
    PORT: '0',
    ...env,
  });
  const match = await waitForOutput(proc, proc.stdout, /\{"event":"listening","url":"([^"]+)"\}/, 'Deno worker');
  return { url: match[1]!, process: proc };
}

/** server-everything's Streamable HTTP server on a free port; its MCP endpoint is `<url>/mcp`. */
export async function startEverythingHttp(procs: ProcessSet): Promise<{ url: string; process: RunningProcess }> {
  const port = await freePort();
  const proc = procs.spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { PORT: String(port) });
  await waitForOutput(proc, proc.stderr, /listening on port/, 'server-everything');
  return { url: `http://127.0.0.1:${port}/mcp`, process: proc };
}

/** An SDK client over Streamable HTTP with a bearer token; close it with `closeClient`. */
export async function connectClient(url: string, token: string, capabilities: ClientCapabilities = {}, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
  });
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' }, { capabilities });
  await client.connect(transport);
  return client;
}

/** Ends the agent session (DELETE) and closes the client. */
export async function closeClient(client: Client): Promise<void> {
  await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
  await client.close();
}

export interface SidecarHandle {
  process: RunningProcess;
  /** Parsed JSON log lines so far. */
  lines(): Array<Record<string, unknown>>;
  /** Pids of every server process it spawned so far. */
  serverPids(): number[];
  /** Resolves with the first log line matching `match` (waiting for it if needed). */
  waitForLine(match: (line: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>>;
}

/** The real `switchyard sidecar` command, with the secret written to a 0600 file in the config dir. */
export function sidecarCommand(options: { worker: string; entityId: string; secret: string; configDir: string }): { args: string[]; env: Record<string, string> } {
  const secretFile = join(options.configDir, 'host.secret');
  writeFileSync(secretFile, options.secret + '\n', { mode: 0o600 });
  return {
    args: ['--import', 'tsx', 'cli/main.ts', 'sidecar', '--config-dir', options.configDir, '--worker', options.worker, '--entity-id', options.entityId, '--secret-file', secretFile],
    env: { SWITCHYARD_LINK_RETRY_FIRST_MS: '100', SWITCHYARD_LINK_RETRY_CAP_MS: '500' },
  };
}

/** A sidecar process: the real CLI (production composition), linked to `worker`. */
export async function startSidecar(
  procs: ProcessSet,
  options: { worker: string; entityId: string; secret: string; configDir: string },
): Promise<SidecarHandle> {
  const { args, env } = sidecarCommand(options);
  const proc = procs.spawn(process.execPath, args, env);
  const lines = (): Array<Record<string, unknown>> =>
    proc.stderr().split('\n').flatMap((text) => {
      try {
        const parsed: unknown = JSON.parse(text);
        return typeof parsed === 'object' && parsed !== null ? [parsed as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  const handle: SidecarHandle = {
    process: proc,
    lines,
    serverPids: () => lines().filter((l) => l.msg === 'Server spawned' && typeof l.pid === 'number').map((l) => l.pid as number),
    async waitForLine(match, what) {
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        const found = lines().find(match);
        if (found !== undefined) return found;
        if (Date.now() > deadline || proc.child.exitCode !== null) throw new Error(`Sidecar did not log ${what}; its log:\n${proc.stderr().slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
  return handle;
}


/** Polls `probe` until it returns true; for hooks, where `expect.poll` is not available. */
export async function waitUntil(probe: () => Promise<boolean> | boolean, what: string, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
