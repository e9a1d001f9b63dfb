/**
 * The sidecar as users run it: the real CLI, `node --import tsx cli/main.ts sidecar --config-dir
 * DIR` (the production composition), owned by a `ProcessSet`, with its JSON log read as lines.
 * Link retries are shortened so that relinking after a fault is quick.
 *
 * Uncontained servers are spawned detached: a SIGKILLed sidecar ends them (their parent-death
 * signal) but not what they started; every pid the sidecar logged as spawned is SIGKILLed (its
 * process group) once the set stops.
 *
 * @module
 */
import { msg, type LogLine } from './line-log.ts';
import { killGroups, watch, type ProcessSet, type WatchedProcess } from './processes.ts';

export interface SidecarOptions {
  logLevel?: 'debug' | 'info' | 'warn';
  /** Flags for the sidecar's node before `--import tsx` (e.g. `--inspect=127.0.0.1:0`). */
  nodeFlags?: string[];
  env?: Record<string, string>;
}

export interface SidecarProcess extends WatchedProcess {
  /** Parsed JSON log lines so far. */
  lines(): Array<Record<string, unknown>>;
  /** Pids of every server it logged as spawned, in order. */
  serverPids(): number[];
  /** The first log line (past or future) matching `match`; rejects after `timeoutMs` or when it exits. */
  waitForLine(match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/** The command line of the real sidecar on `configDir` (for launchers other than a `ProcessSet`). */
export function sidecarCommand(configDir: string, options: SidecarOptions = {}): { command: string; args: string[]; env: Record<string, string> } {
  return {
    command: process.execPath,
    args: [...(options.nodeFlags ?? []), '--import', 'tsx', 'cli/main.ts', 'sidecar', '--config-dir', configDir],
    env: { SWITCHYARD_LINK_RETRY_FIRST_MS: '100', SWITCHYARD_LINK_RETRY_CAP_MS: '500', SWITCHYARD_LOG_LEVEL: options.logLevel ?? 'info', ...options.env },
  };
}

/** Pids of the servers a sidecar logged as spawned. */
export const spawnedPids = (sidecar: WatchedProcess): number[] =>
  sidecar.err.filter(msg('Server spawned')).flatMap((l) => (typeof l.json.pid === 'number' ? [l.json.pid] : []));

/** Starts the sidecar on a config dir written by `writeSidecarDir`; returns at once, before it links. */
export function startSidecar(procs: ProcessSet, configDir: string, options: SidecarOptions = {}): SidecarProcess {
  const { command, args, env } = sidecarCommand(configDir, options);
  const watched = watch(procs.spawn(command, args, env));
  const serverPids = () => spawnedPids(watched);
  procs.afterStop(() => killGroups(serverPids()));
  const json = (line: LogLine) => line.json;
  return {
    ...watched,
    lines: () => watched.err.lines.filter((l) => l.text.startsWith('{')).map(json),
    serverPids,
    async waitForLine(match, what, timeoutMs) {
      return json(await watched.err.waitFor((l) => match(l.json), `Sidecar did not log ${what}`, timeoutMs === undefined ? {} : { timeoutMs }));
    },
  };
}
