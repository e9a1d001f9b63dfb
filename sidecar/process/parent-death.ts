/**
 * An ordinary (uncontained) server ends with the sidecar even when the sidecar cannot end it
 * itself: SIGKILL, the OOM killer, a crash. util-linux's `setpriv --pdeathsig KILL` sets the
 * parent-death signal and execs the launch (through `prlimit`'s exec too: it holds across
 * `execve`), so the kernel kills the server when the sidecar's main thread, which spawned it,
 * ends. A contained launch has the same from bubblewrap's `--die-with-parent`.
 *
 * It reaches the server's own process, not what the server started (the real server behind `npx`):
 * those end with their process group, which the group watchdog kills (`group-watchdog.ts`).
 *
 * @module
 */
import { type HelperResult, runHelper } from './masked-spawn.ts';
import { findUtilLinuxTool } from './util-linux.ts';

/** Where `setpriv` is, or null (not Linux, or util-linux absent). */
export function findSetpriv(env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  return findUtilLinuxTool('setpriv', env, platform);
}

/** The command line that runs `file args` with SIGKILL as its parent-death signal (setpriv execs it: same pid, same descriptors). */
export function diesWithParentCommand(setpriv: string, file: string, args: readonly string[]): { file: string; args: string[] } {
  return { file: setpriv, args: ['--pdeathsig', 'KILL', '--', file, ...args] };
}

/** Longest wait for the probe: setpriv execs itself, a few milliseconds on an idle host. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Whether `setpriv` takes `--pdeathsig`: util-linux added it in 2.33, and a host with an older
 * one (RHEL 8's 2.32) or BusyBox's refuses the option, and with it every launch run through it.
 * Asked by running it for real, through itself (`setpriv --pdeathsig KILL -- setpriv --version`),
 * so nothing but the tool in question needs to be on the host. A probe that timed out says
 * nothing of the tool: the launch goes through it, as when the probe passed.
 */
export async function takesParentDeathSignal(setpriv: string): Promise<{ ok: true } | { ok: false; problem: string }> {
  const { file, args } = diesWithParentCommand(setpriv, setpriv, ['--version']);
  let result: HelperResult;
  try {
    result = await runHelper(file, args, { timeoutMs: PROBE_TIMEOUT_MS });
  } catch (error) {
    // The spawn refused outright (spawnMasked's WireError): no verdict on the tool, but no launch through it either.
    return { ok: false, problem: error instanceof Error ? error.message : String(error) };
  }
  if (result.ok || result.timedOut === true) return { ok: true };
  const said = result.stderr.trim().split('\n')[0]?.slice(0, 200);
  return { ok: false, problem: said !== undefined && said !== '' ? `${result.message}: ${said}` : result.message };
}
