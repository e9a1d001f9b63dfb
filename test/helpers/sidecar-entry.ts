/**
 * A sidecar process for the worker's end-to-end tests: the production composition
 * (`createSidecarComposition`: link client, McpTransportListener, RemoteMcpHostHandler, process
 * executor), configured from the environment, logging JSON lines on stderr. Every server it
 * spawns is logged as `Server spawned` with its pid, so tests can check that each agent session
 * got its own process and that every process is gone afterwards.
 *
 * Usage: SWITCHYARD_E2E_WORKER=… SWITCHYARD_E2E_ENTITY=… SWITCHYARD_E2E_SECRET=…
 *        SWITCHYARD_E2E_CONFIG_DIR=… node --import tsx test/helpers/sidecar-entry.ts
 */
import { createSidecarComposition } from '../../sidecar/host/composition.ts';
import { createLogger } from '../../sidecar/log.ts';

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`Missing environment variable ${name}`);
  return value;
}

const log = createLogger({ level: 'info' });
const sidecar = createSidecarComposition({
  configDir: env('SWITCHYARD_E2E_CONFIG_DIR'),
  entityId: env('SWITCHYARD_E2E_ENTITY'),
  user: 'tester',
  worker: env('SWITCHYARD_E2E_WORKER'),
  secret: env('SWITCHYARD_E2E_SECRET'),
  log,
  executor: { onSpawn: (attempt) => log.info('Server spawned', { pid: attempt.pid ?? null, backend: attempt.backend }) },
  link: { backoff: { firstMs: 100, capMs: 500 }, onLinked: () => log.info('Linked to the worker') },
});

let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  void sidecar.stop().finally(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
sidecar.start();
