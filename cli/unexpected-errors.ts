/**
 * The last resort of a process that hosts servers (the sidecar; the single-machine worker, which
 * hosts them in-process) against an exception nothing caught: log it and keep serving.
 *
 * Node's default is to end the process on an uncaught exception or an unhandled rejection. For a
 * sidecar that is the worst outcome of one agent's bad request: every other agent's servers on
 * the host end with it, and uncontained servers may be left orphaned. The paths a hostile agent,
 * server or worker can reach are guarded where they are (the link's message dispatch, the
 * bridge, the tool-call authorizer, the depth checks); this catches what those miss, so a bug
 * there costs one channel, not the host.
 *
 * Why resuming is acceptable here, against Node's general advice: the sidecar's state is per
 * channel (a bridge, a process handle), and an exception unwinds only the handler it was thrown
 * in. What it can leave behind is one channel that never answers or one process not yet
 * registered for cleanup, never a weaker sandbox: a policy is compiled and awaited before any
 * spawn, and a launch without its policy does not exist. The error is logged with its stack
 * (`shared/unexpected-error-report.ts`), so the hole gets fixed. The Deno worker does the same
 * (`worker/adapters/deno/deno-env.ts`).
 *
 * @module
 */
import type { Logger } from '../sidecar/log.ts';
import { unexpectedErrorReporter } from '../shared/unexpected-error-report.ts';

let installed = false;

/** Installs the handlers once per process that hosts servers (`switchyard sidecar`, `switchyard worker --runtime node`). */
export function keepServingOnUnexpectedErrors(log: Logger): void {
  if (installed) return;
  installed = true;
  const report = unexpectedErrorReporter(log);
  process.on('uncaughtException', (error) => report('Uncaught exception', error));
  process.on('unhandledRejection', (reason) => report('Unhandled promise rejection', reason));
}
