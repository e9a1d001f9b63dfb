/**
 * Runs the real `switchyard sidecar` command as a child process and reads its JSON log lines, so link
 * tests can wait for what the sidecar says and clean up every process it started, even after the
 * sidecar itself was SIGKILLed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { sidecarCommand } from '../helpers/worker-processes.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface SidecarProcess {
  child: ChildProcess;
  /** Every parsed log line so far. */
  lines: Record<string, unknown>[];
  /** The raw stderr text so far, for scanning for secrets. */
  raw(): string;
  /** Resolves with the first line (past or future) matching `match`, or rejects after `ms`. */
  waitForLine(match: (line: Record<string, unknown>) => boolean, ms: number, what: string): Promise<Record<string, unknown>>;
  /** Pids of the servers it spawned. */
  serverPids(): number[];
  /** SIGTERM (then SIGKILL), and SIGKILL every server process group it spawned. */
  stop(): Promise<void>;
}

export function startSidecarProcess(env: { worker: string; entityId: string; secret: string; configDir: string }): SidecarProcess {
  const command = sidecarCommand(env);
  const child = spawn(process.execPath, command.args, {
    cwd: ROOT,
    env: { ...process.env, ...command.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<{ match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }>();
  let raw = '';
  let partial = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    raw += chunk;
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text);
      } catch {
        line = { msg: text };
      }
      lines.push(line);
      for (const waiter of waiters) if (waiter.match(line)) waiter.resolve(line);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const serverPids = () => lines.filter((l) => l.msg === 'Server spawned' && typeof l.pid === 'number').map((l) => l.pid as number);

  return {
    child,
    lines,
    raw: () => raw,
    serverPids,
    waitForLine(match, ms, what) {
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const waiter = {
          match,
          resolve: (line: Record<string, unknown>) => {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(line);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`Sidecar did not log ${what} within ${ms} ms; its log:\n${raw.slice(-4000)}`));
        }, ms);
        waiters.add(waiter);
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
      for (const pid of serverPids()) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Already gone, as it should be.
        }
      }
    },
  };
}
