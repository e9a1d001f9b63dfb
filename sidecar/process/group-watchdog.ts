/**
 * The process groups of a sidecar's servers end with the sidecar even when it is killed outright
 * (SIGKILL, the OOM killer) and what outlives it is not the server's own process: `npx`, `uvx`
 * and shell wrappers start the real server as their child, which the parent-death signal
 * (`parent-death.ts`) does not reach, and a server that does not end with its stdin (an interval
 * keeps server-everything alive) then runs on, an orphan.
 *
 * A small POSIX `sh` beside the sidecar holds the list of its live server groups, sent one line
 * each over a pipe (`+PGID`, `-PGID`); when the pipe ends, however the sidecar ended, it sends
 * SIGKILL to every group still listed, then exits. A group leaves the list as soon as it is gone
 * (`whenGroupGone`), so no number it kills has been handed to anyone else since. It runs in its
 * own session, so a terminal's Ctrl-C to the sidecar's group does not take the list with it.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { Logger } from '../log.ts';
import { earlySpawnError, spawnMasked } from './masked-spawn.ts';

/**
 * The watchdog: reads `+PGID` and `-PGID` lines, and `c+DIR` and `c-DIR` lines for the servers'
 * cgroups (`server-cgroups.ts`), until the pipe ends; then kills what is listed: each cgroup's
 * members (what left its server's group among them), at one stroke where the kernel has
 * `cgroup.kill`, and each group.
 */
export const WATCHDOG_SCRIPT = [
  // A cgroup path is text, not a pattern: systemd escapes a unit's dash as `\x2d`, and a `*` or
  // `[` would match others; `set -f` keeps the loops from globbing, the quotes the removals.
  'set -f',
  // Cgroups are kept one per line, as they come: a path may hold a space, never a newline.
  "nl='",
  "'",
  "groups=' '",
  'cgroups="$nl"',
  'while IFS= read -r line; do',
  '  case "$line" in',
  '    c+*) cgroups="$cgroups${line#c+}$nl" ;;',
  '    c-*) c=${line#c-}; case "$cgroups" in *"$nl$c$nl"*) cgroups="${cgroups%%"$nl$c$nl"*}$nl${cgroups#*"$nl$c$nl"}" ;; esac ;;',
  '    +*) groups="$groups${line#+} " ;;',
  '    -*) g=${line#-}; case "$groups" in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac ;;',
  '  esac',
  'done',
  // Split at newlines only for the list itself; the loop's body splits as the shell does by default.
  'IFS="$nl"',
  'for c in $cgroups; do',
  '  unset IFS',
  '  if [ -e "$c/cgroup.kill" ]; then echo 1 > "$c/cgroup.kill"; else for p in $(cat "$c/cgroup.procs"); do kill -KILL "$p"; done; fi',
  'done 2>/dev/null',
  'unset IFS',
  // `kill -KILL -PGID`: dash, the usual /bin/sh, takes no `--` there.
  'for g in $groups; do kill -KILL "-$g" 2>/dev/null; done',
].join('\n');

/** Longest wait for a closed watchdog to kill what it lists and exit: a few `kill`s take milliseconds. */
const CLOSE_WAIT_MS = 5_000;

export interface GroupWatchdogOptions {
  logger: Logger;
  /** The groups live now, sent to a watchdog as it starts (again, after one died). */
  liveGroups: () => Iterable<number>;
  /** The servers' cgroups live now, sent with them. */
  liveCgroups?: () => Iterable<string>;
  /** The shell; `/bin/sh` by default. */
  shell?: string;
}

export class GroupWatchdog {
  readonly #options: GroupWatchdogOptions;
  #child: ChildProcess | undefined;
  #stdin: Writable | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: GroupWatchdogOptions) {
    this.#options = options;
  }

  /** Lists the group `pgid` (its leader's pid), starting the watchdog first if none runs. */
  watch(pgid: number): void {
    if (pgid <= 0) return;
    if (this.#stdin === undefined) this.#start(pgid, undefined);
    else this.#stdin.write(`+${pgid}\n`);
  }

  /** Lists a server's cgroup directory, whose members it kills with the groups. */
  watchCgroup(dir: string): void {
    if (!listable(dir)) return;
    if (this.#stdin === undefined) this.#start(undefined, dir);
    else this.#stdin.write(`c+${dir}\n`);
  }

  /** Takes a cgroup off the list: it is being removed. */
  forgetCgroup(dir: string): void {
    if (listable(dir)) this.#stdin?.write(`c-${dir}\n`);
  }

  /** Takes the group `pgid` off the list: it is gone. */
  forget(pgid: number): void {
    if (pgid > 0) this.#stdin?.write(`-${pgid}\n`);
  }

  /** Ends the watchdog (it kills whatever is still listed) and waits for it; the next `watch` starts another. */
  close(): Promise<void> {
    const child = this.#child;
    const stdin = this.#stdin;
    if (child === undefined || stdin === undefined) return this.#closing ?? Promise.resolve();
    this.#child = undefined;
    this.#stdin = undefined;
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // Waited for now, so it keeps the process alive until it is done: unref'd, a process with
    // nothing else to do (doctor --launch, a CLI ending) exited before the groups were killed.
    child.ref();
    stdin.end();
    // Bounded: a stop must not hang on the watchdog; what it still lists was ended by the caller.
    let timer: NodeJS.Timeout | undefined;
    const bounded = Promise.race([
      exited,
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          this.#options.logger.warn('The server group watchdog did not end when asked; it was killed', { pid: child.pid, waitedMs: CLOSE_WAIT_MS });
          child.kill('SIGKILL');
          resolve();
        }, CLOSE_WAIT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    this.#closing = bounded;
    return bounded;
  }

  /** Starts a watchdog listing `pgid` or `cgroup`, and every live group and cgroup (all of them again, after one died). */
  #start(pgid: number | undefined, cgroup: string | undefined): void {
    let child: ChildProcess;
    try {
      child = spawnMasked(this.#options.shell ?? '/bin/sh', ['-c', WATCHDOG_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    } catch (error) {
      this.#options.logger.warn('Server process groups are not watched: the watchdog could not start', { error });
      return;
    }
    const early = earlySpawnError(child);
    if (early !== undefined) {
      void early.then((error) => this.#options.logger.warn('Server process groups are not watched: the watchdog could not start', { error }));
      return;
    }
    const stdin = child.stdin!;
    // Neither keeps the sidecar running; the pipe's end is the whole point.
    child.unref();
    (stdin as Writable & { unref?: () => void }).unref?.();
    stdin.on('error', () => {});
    child.once('error', (error) => this.#lost(child, error));
    child.once('exit', (code, signal) => this.#lost(child, { code, signal }));
    this.#child = child;
    this.#stdin = stdin;
    const groups = new Set([...(pgid === undefined ? [] : [pgid]), ...this.#options.liveGroups()].filter((group) => group > 0));
    const cgroups = new Set([...(cgroup === undefined ? [] : [cgroup]), ...(this.#options.liveCgroups?.() ?? [])].filter(listable));
    stdin.write([...[...cgroups].map((dir) => `c+${dir}\n`), ...[...groups].map((group) => `+${group}\n`)].join(''));
  }

  /** The watchdog ended without being asked: the next `watch` starts another, with every live group. */
  #lost(child: ChildProcess, how: unknown): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    this.#stdin = undefined;
    this.#options.logger.warn('The server group watchdog ended; the next launch starts another', { how });
  }
}

/** The script's cgroups are lines: a directory with a newline in its path is left to the next sidecar's start. */
function listable(dir: string): boolean {
  return dir !== '' && !/[\n\r]/.test(dir);
}
