/**
 * Deno entry for `deno run` (what `switchyard worker` and the tests use):
 *
 * ```sh
 * SWITCHYARD_WORKER_CONFIG_FILE=worker.json HOST=127.0.0.1 PORT=8787 \
 *   deno run --unstable-no-legacy-abort --allow-net --allow-read --allow-env worker/adapters/deno/deno-worker.ts
 * ```
 *
 * `HOST` and `PORT` default to 127.0.0.1 and 8787; `PORT=0` picks a free port. Once listening it
 * prints one JSON line on stdout, `{"event":"listening","url":"http://127.0.0.1:8787"}`, so a
 * parent process knows the URL. SIGTERM or SIGINT closes every agent session (and with them the
 * channels and server processes), stops the server and exits 0.
 *
 * With `SWITCHYARD_STOP_ON_STDIN_END=1` the end of stdin stops it the same way. The CLI that runs
 * Deno holds stdin's other end and never writes to it, so the kernel ends it when the CLI is gone
 * however it went (SIGKILL, a signal before its handlers were in place): a worker nobody can stop
 * any more must not keep the port and the agents' sessions.
 *
 * `deno serve` users take `deno-serve.ts` instead, which default-exports `{ fetch }`.
 *
 * @module
 */
import { listenFailureMessage } from '../../listen-failure.ts';
import { listeningFields } from '../../listening-fields.ts';
import { createDenoWorker, deno, envOf, type DenoHttpServer } from './deno-env.ts';
import { denoFetch } from './deno-fetch.ts';
import { keepServingOnUnexpectedErrors } from './deno-unexpected-errors.ts';

const SHUTDOWN_GRACE_MS = 3_000;

let listening: number | undefined;
const { worker, log } = await createDenoWorker({ listenPort: () => listening });
// Empty counts as unset, and a port is digits only, as `switchyard worker` reads them (`cli/listen-address.ts`).
const hostname = envOf('HOST') || '127.0.0.1';
const portText = envOf('PORT') || '8787';
const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
if (!(port >= 0 && port <= 65535)) {
  console.error(`Invalid PORT "${envOf('PORT')}": expected 0-65535`);
  deno.exit(2);
}

let server: DenoHttpServer;
try {
  server = deno.serve(
    {
      hostname,
      port,
      onListen(addr) {
        listening = addr.port;
        // From here on, not before: a start that fails must exit with its error, not be kept running.
        keepServingOnUnexpectedErrors(log);
        const host = addr.hostname.includes(':') ? `[${addr.hostname}]` : addr.hostname;
        console.log(JSON.stringify({ event: 'listening', url: `http://${host}:${addr.port}` }));
        log.info(
          'Worker listening',
          listeningFields(worker.config, {
            url: `http://${host}:${addr.port}`,
            config: envOf('SWITCHYARD_WORKER_CONFIG_FILE') || 'SWITCHYARD_WORKER_CONFIG',
            stateDir: envOf('SWITCHYARD_STATE_DIR') || null,
            oauthKeysGiven: Boolean(envOf('SWITCHYARD_OAUTH_KEYS')?.trim()),
          }),
        );
      },
    },
    denoFetch(worker),
  );
} catch (error) {
  console.error(listenFailureMessage(hostname, port, error));
  await worker.close();
  deno.exit(1);
}

let stopping = false;
async function stop(cause: 'SIGTERM' | 'SIGINT' | 'stdin-end'): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info('Worker stopping', { cause });
  const grace = new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS));
  // The worker first: its links' close tells each host the worker is stopping, which the server's
  // shutdown, closing every socket with 1001, would otherwise beat (the host then sees a lost link).
  const closed = (async () => {
    await worker.close().catch(() => {});
    await server.shutdown();
  })();
  await Promise.race([closed, grace]);
  deno.exit(0);
}
deno.addSignalListener('SIGTERM', () => void stop('SIGTERM'));
deno.addSignalListener('SIGINT', () => void stop('SIGINT'));
if (envOf('SWITCHYARD_STOP_ON_STDIN_END') === '1') void untilEnd(deno.stdin.readable).then(() => stop('stdin-end'));

/** Resolves once `stream` ends or fails: either way the parent is gone. */
async function untilEnd(stream: ReadableStream<Uint8Array>): Promise<void> {
  const reader = stream.getReader();
  try {
    while (!(await reader.read()).done);
  } catch {
    // A read error on the lifeline means the same as its end.
  }
}
