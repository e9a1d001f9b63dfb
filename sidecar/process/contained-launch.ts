/**
 * What the process executor needs from a compiled containment policy, and nothing more.
 *
 * The executor knows no sandbox backend: a policy (compiled in `sidecar/sandbox/`, one backend
 * per folder, the hono `adapter/<runtime>/` way) wraps the server's command line into the sandbox
 * tool's own, says when the sandbox runs the command, and tells the tool's setup failure from the
 * server's exit. The dependency points from `sandbox/` to here, never back.
 *
 * @module
 */
import type { Readable } from 'node:stream';
import type { WireError } from '../../shared/errors.ts';
import type { ProcessExit } from './process-handle.ts';

/** The sandbox tool's command line that runs one server inside the sandbox. */
export interface SandboxSpawn {
  readonly file: string;
  readonly args: readonly string[];
  /** The complete environment of the sandbox tool (and so of the server). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Pipes beyond stdin, stdout and stderr, as fds 3, 4, …, through which the tool reports (bwrap's status fd). */
  readonly extraPipes?: number;
}

/** `unknown`: the sandbox cannot tell; the executor then watches a fixed setup window. */
export type SandboxReadiness = 'ready' | 'unknown';

/** A compiled containment policy as the executor sees it: it knows how to launch under itself. */
export interface ContainedLaunch {
  /** The backend's name, for spawn reports, logs and error detail (`bubblewrap`, `seatbelt`). */
  readonly backend: string;
  /**
   * @param command The resolved file of the server.
   * @param args Its arguments.
   * @returns What to spawn instead.
   * @throws WireError `containment-unavailable` when the backend cannot run on this host.
   */
  wrap(command: string, args: readonly string[]): SandboxSpawn;
  /** Resolves once the sandbox runs the command, or `unknown`; `extra` are the pipes of {@link SandboxSpawn.extraPipes}. */
  whenReady(extra: readonly Readable[], signal: AbortSignal): Promise<SandboxReadiness>;
  /** The launch failure the tool's stderr explains, or `undefined` when the server itself exited. */
  classifyFailure(stderr: string, exit: ProcessExit): WireError | undefined;
}
