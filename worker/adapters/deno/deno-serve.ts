/**
 * Deno entry for `deno serve`, which owns the listening socket itself:
 *
 * ```sh
 * SWITCHYARD_WORKER_CONFIG_FILE=worker.json \
 *   deno serve --unstable-no-legacy-abort --allow-net --allow-read --allow-env --host 127.0.0.1 --port 8787 worker/adapters/deno/deno-serve.ts
 * ```
 *
 * Same worker as `deno-worker.ts` (config from the environment, `/link` over Deno WebSockets); no
 * listening line, since `deno serve` prints one. `deno serve` also stops listening on SIGTERM or
 * SIGINT, but the process would then stay: a watched config file (`Deno.watchFs`) and the sessions'
 * timers keep it alive. So on either signal the worker closes its sessions too (a few seconds at
 * most) and the process exits, as `switchyard worker` does.
 *
 * @module
 */
import { createDenoWorker } from './deno-env.ts';
import { denoFetch } from './deno-fetch.ts';
import { keepServingOnUnexpectedErrors } from './deno-unexpected-errors.ts';

/** As long as `deno-worker.ts` gives sessions to close before the process ends anyway. */
const SHUTDOWN_GRACE_MS = 3_000;

const deno = (globalThis as unknown as { Deno: { addSignalListener(signal: 'SIGTERM' | 'SIGINT', handler: () => void): void; exit(code: number): never } }).Deno;
const { worker, log } = await createDenoWorker();
// Once built, not before: a start that fails must exit with its error, not be kept running.
keepServingOnUnexpectedErrors(log);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await Promise.race([worker.close(), new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS))]);
  deno.exit(0);
};
deno.addSignalListener('SIGTERM', () => void stop());
deno.addSignalListener('SIGINT', () => void stop());

export default { fetch: denoFetch(worker) } satisfies { fetch: (request: Request) => Response | Promise<Response> };
