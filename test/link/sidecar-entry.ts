/**
 * A sidecar process for link tests: the production composition (link client, listener, handler,
 * executor), configured from the environment, logging JSON lines to stderr. It logs each server
 * it spawns with its pid, so a test that SIGKILLs this process can still end those servers.
 *
 * Usage: SWITCHYARD_TEST_WORKER=… SWITCHYARD_TEST_ENTITY=… SWITCHYARD_TEST_SECRET=…
 *        SWITCHYARD_TEST_CONFIG_DIR=… node --import tsx test/link/sidecar-entry.ts
 */
import { createSidecarComposition } from '../../sidecar/host/composition.ts';
import { createLogger } from '../../sidecar/log.ts';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`Missing environment variable ${name}`);
  return value;
};

const log = createLogger({ level: 'info' });
const sidecar = createSidecarComposition({
  configDir: env('SWITCHYARD_TEST_CONFIG_DIR'),
  entityId: env('SWITCHYARD_TEST_ENTITY'),
  user: 'tester',
  worker: env('SWITCHYARD_TEST_WORKER'),
  secret: env('SWITCHYARD_TEST_SECRET'),
  log,
  executor: { onSpawn: (attempt) => log.info('Server spawned', { pid: attempt.pid ?? null, backend: attempt.backend }) },
  link: { backoff: { firstMs: 200, capMs: 1_000 } },
});

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void sidecar.stop().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
sidecar.start();
