/**
 * An ordinary (uncontained) server ends with the sidecar even when the sidecar cannot end it
 * itself: SIGKILL, the OOM killer, a crash. util-linux's `setpriv --pdeathsig KILL` sets the
 * parent-death signal and execs the launch (through `prlimit`'s exec too: it holds across
 * `execve`), so the kernel kills the server when the sidecar's main thread, which spawned it,
 * ends. A contained launch has the same from bubblewrap's `--die-with-parent`.
 *
 * It reaches the server's own process, not what the server started: those still end with their
 * stdin, or when the sidecar ends their process group on an orderly stop.
 *
 * @module
 */
import { findUtilLinuxTool } from './util-linux.ts';

/** Where `setpriv` is, or null (not Linux, or util-linux absent). */
export function findSetpriv(env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  return findUtilLinuxTool('setpriv', env, platform);
}

/** The command line that runs `file args` with SIGKILL as its parent-death signal (setpriv execs it: same pid, same descriptors). */
export function diesWithParentCommand(setpriv: string, file: string, args: readonly string[]): { file: string; args: string[] } {
  return { file: setpriv, args: ['--pdeathsig', 'KILL', '--', file, ...args] };
}
