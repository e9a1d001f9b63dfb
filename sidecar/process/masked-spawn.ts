/**
 * The one `spawn` of the sidecar and the CLI: every process they start (a server, bwrap,
 * slirp4netns, a probe's `bwrap … true` or `slirp4netns --version`, Windows' `taskkill`, the
 * CLI's Deno worker and doctor's `--version` runs) goes through here, so none inherits what the
 * parent holds without close-on-exec (DESIGN §5: no stray descriptors). The list is read in the
 * same synchronous step as the spawn and masked in the child (`inherited-fds.ts`); a list that
 * cannot be read refuses the spawn. `masked-spawn.test.ts` checks that nothing else in `sidecar/`
 * or `cli/` imports a spawning function of `node:child_process`.
 *
 * @module
 */
import { type ChildProcess, spawn, type SpawnOptions, type StdioNull, type StdioPipe } from 'node:child_process';
import { type DescriptorMask, maskInheritableDescriptors } from './inherited-fds.ts';

/** One `stdio` entry of a spawn's own, before the mask. */
export type StdioEntry = StdioPipe | StdioNull | 'inherit' | number;

export interface MaskedSpawnOptions extends Omit<SpawnOptions, 'stdio'> {
  /** The spawn's own `stdio`; the mask's entries follow it. */
  readonly stdio: readonly StdioEntry[];
  /** Told what was masked, before the spawn (for the log; never for the link). */
  readonly onMask?: (mask: DescriptorMask) => void;
  /**
   * The mask the caller made over these same `stdio` entries, in the same synchronous step (a
   * sandbox backend's, whose entries `stdio` already ends with; `null`: nothing to mask): not
   * listed again, since a listing costs milliseconds.
   */
  readonly masked?: DescriptorMask | null;
}

/**
 * `spawn` with everything the sidecar holds without close-on-exec on `/dev/null` in the child.
 *
 * @throws WireError `launch-failed` when the sidecar's descriptors cannot be listed or one lies
 *   beyond what a spawn can mask; and whatever `spawn` throws.
 */
export function spawnMasked(file: string, args: readonly string[], options: MaskedSpawnOptions): ChildProcess {
  const { stdio, onMask, masked, ...rest } = options;
  if (masked !== undefined) return spawn(file, args, { ...rest, stdio: [...stdio] });
  const mask = maskInheritableDescriptors(stdio.length);
  try {
    if (mask !== null) onMask?.(mask);
    return spawn(file, args, { ...rest, stdio: [...stdio, ...(mask?.stdio ?? [])] });
  } finally {
    mask?.close();
  }
}

/**
 * The error of a spawn Node gave up on before it made the child's pipes (EMFILE, ENFILE: the
 * sidecar is out of descriptors). Such a child has no `stdio` at all, and Node emits the error on
 * the next tick, when nobody may be listening yet: that would end the sidecar.
 *
 * @returns The error, once emitted; `undefined` for a spawn that got as far as its pipes.
 */
export function earlySpawnError(child: ChildProcess): Promise<Error> | undefined {
  if (child.stdio !== undefined) return undefined;
  return new Promise((resolve) => child.once('error', resolve));
}

/** How a short-lived helper ended: `errno` when it could not be started, else its exit. */
export interface HelperResult {
  readonly ok: boolean;
  /** Set when the spawn itself failed (`ENOENT`: not installed). */
  readonly errno?: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The spawn failure, or a non-zero exit, in words; empty when `ok`. */
  readonly message: string;
  /** Killed after `timeoutMs`: a verdict on the host should not be drawn from it (a loaded host is slow). */
  readonly timedOut?: true;
}

const OUTPUT_BYTES = 64 * 1024;

/**
 * Runs a short-lived helper to its end, instead of `execFile`, which cannot be masked: it takes no `stdio`.
 *
 * @param options `env`: the helper's whole environment (default the sidecar's); after `timeoutMs`
 *   the helper gets SIGKILL and the result says so.
 * @returns Never rejects for the helper's own failure (an `errno` such as EMFILE when it could not
 *   be started); rejects, never throws, when the spawn is refused ({@link spawnMasked}'s WireError).
 */
export function runHelper(file: string, args: readonly string[], options: { env?: Readonly<Record<string, string>>; timeoutMs: number }): Promise<HelperResult> {
  let child: ChildProcess;
  try {
    // Its own process group, so that a helper past its time is ended with every process it started:
    // one left holding the output pipes (a wrapper script's `sleep`) kept `close` from ever coming.
    child = spawnMasked(file, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true, detached: process.platform !== 'win32', ...(options.env === undefined ? {} : { env: { ...options.env } }) });
  } catch (error) {
    return Promise.reject(error);
  }
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString('utf8')).slice(0, OUTPUT_BYTES)));
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(0, OUTPUT_BYTES)));
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
      // A process that left the group (setsid) may still hold the pipes: `close` must come anyway.
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, options.timeoutMs);
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const errno = String(error.code ?? 'unknown');
      resolve({ ok: false, errno, code: null, signal: null, stdout, stderr, message: `${file} could not be started: ${errno}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (child.pid === undefined) return; // the 'error' above resolved
      const ok = code === 0 && !timedOut;
      const message = ok ? '' : timedOut ? `${file} did not finish within ${options.timeoutMs} ms` : `${file} exited with ${signal ?? `code ${code}`}`;
      resolve({ ok, code, signal, stdout, stderr, message, ...(timedOut ? { timedOut: true as const } : {}) });
    });
  });
}

/** SIGKILL to the helper's process group, or to the helper alone where there are no groups. */
function killGroup(child: ChildProcess): void {
  try {
    if (process.platform !== 'win32' && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    else child.kill('SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}
