/**
 * Deno entry for `deno serve`, which owns the listening socket itself:
 *
 * ```sh
 * SWITCHYARD_WORKER_CONFIG_FILE=worker.json \
 *   deno serve --unstable-no-legacy-abort --allow-net --allow-read --allow-env --host 127.0.0.1 --port 8787 worker/adapters/deno/deno-serve.ts
 * ```
 *
 * Same worker as `deno.ts` (config from the environment, `/link` over Deno WebSockets); no
 * listening line and no signal handling of its own, since `deno serve` does both.
 *
 * @module
 */
import { createDenoWorker } from './deno-env.ts';

const { worker } = await createDenoWorker();

export default { fetch: worker.fetch } satisfies { fetch: (request: Request) => Response | Promise<Response> };
