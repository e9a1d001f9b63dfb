/**
 * `switchyard sidecar`: links this workstation to its worker and hosts the configured servers,
 * through the production composition. `switchyard sidecar profiles` prints trust profile revisions;
 * `switchyard sidecar init` (`sidecar-init.ts`) writes the config and the host key.
 *
 * Logs are JSON lines on stderr. Each spawned server is logged (`Server spawned`, with pid and
 * backend) so operators and tests can account for every process.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { join, resolve } from 'node:path';
import { LocalError } from '../shared/errors.ts';
import { createSidecarComposition, type SidecarComposition } from '../sidecar/host/composition.ts';
import { createLogger, type Logger } from '../sidecar/log.ts';
import { parseLogLevel } from '../shared/log.ts';
import { auditWriter } from '../sidecar/audit/audit-writer.ts';
import { loadSidecarConfig, ownFiles, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { loadHostKey } from '../sidecar/link/host-key.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { ConfigSnapshot } from '../sidecar/config/config-snapshot.ts';
import { checkSidecarDir, describedProblems, logProblemsLetThrough, watchSidecarConfig } from './sidecar-reload.ts';
import { readSidecarConfig } from './sidecar-config-file.ts';
import { FULL_CLI, type Program } from './program.ts';
import { stopOnSignals } from './signals.ts';
import { lockStateDir, type StateDirLock } from './state-dir-lock.ts';
import { keepServingOnUnexpectedErrors } from './unexpected-errors.ts';
import { inheritableDescriptors } from '../sidecar/process/inherited-fds.ts';
import { bubblewrapProbe, systemExposureReason, systemPathsHere } from '../sidecar/sandbox/index.ts';

export function configDirFrom(values: { 'config-dir'?: string | undefined }, program: Program = FULL_CLI): string {
  const dir = values['config-dir'] ?? process.env.SWITCHYARD_CONFIG_DIR;
  if (dir === undefined) throw new LocalError('usage', `Missing --config-dir DIR: the sidecar config dir (see ${program.run} sidecar --help)`);
  return resolve(dir);
}

/** Link timings from the environment, for operators who need faster or slower retries. */
function backoffFromEnv(): { firstMs?: number; capMs?: number } {
  const first = Number(process.env.SWITCHYARD_LINK_RETRY_FIRST_MS);
  const cap = Number(process.env.SWITCHYARD_LINK_RETRY_CAP_MS);
  return { ...(first > 0 ? { firstMs: first } : {}), ...(cap > 0 ? { capMs: cap } : {}) };
}

/**
 * Reads the host key, then builds and starts a linked sidecar; used by `sidecar` and by `start`.
 * `onLinked` runs at each link to the worker (the first one: the host serves from then on).
 * Audit lines go to `audit.file`, or to stderr at `logLevel` (the level `log` writes at).
 */
export async function startSidecar(
  config: SidecarConfig,
  log: Logger,
  logLevel: string = parseLogLevel(process.env.SWITCHYARD_LOG_LEVEL),
  snapshot = ConfigSnapshot.take(config.configDir),
  onLinked?: () => void,
): Promise<SidecarComposition> {
  const key = await loadHostKey(config.keyFile);
  const shown = systemExposureReason(config.configDir, ownFiles(config), systemPathsHere());
  if (shown !== null) log.warn('Every contained launch will be refused', { why: shown });
  const sidecar = createSidecarComposition({
    snapshot,
    configDir: config.configDir,
    entityId: config.entityId,
    user: config.user,
    worker: config.worker,
    key,
    log,
    executor: { onSpawn: (attempt) => log.info('Server spawned', { pid: attempt.pid ?? null, backend: attempt.backend }) },
    link: { backoff: backoffFromEnv(), ...(onLinked !== undefined ? { onLinked } : {}) },
    sandbox: config.sandbox,
    compile: { ownFiles: ownFiles(config) },
    trust: { ...(config.trustFloor !== undefined ? { floor: config.trustFloor } : {}), allowUncontained: config.allowUncontained },
    ...(config.modernInstanceIdleSeconds !== undefined ? { modernInstanceIdleSeconds: config.modernInstanceIdleSeconds } : {}),
    audit: { ...(config.audit !== undefined ? { config: config.audit } : {}), write: auditWriter(config.audit?.file, logLevel, join(config.configDir, 'sidecar.json'), log) },
    // The CLI's host keeps a warm pool unless sidecar.json says otherwise (its defaults when it is silent).
    warmPool: config.warmPool ?? {},
    limits: config.limits,
  });
  sidecar.start();
  return sidecar;
}

export async function runSidecarCommand(argv: string[], program: Program = FULL_CLI): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'config-dir': { type: 'string' },
      worker: { type: 'string' },
      'entity-id': { type: 'string' },
    },
  });
  const dir = configDirFrom(values, program);
  const overrides = {
    ...(values.worker !== undefined ? { worker: values.worker } : {}),
    ...(values['entity-id'] !== undefined ? { entityId: values['entity-id'] } : {}),
  };
  const config = readSidecarConfig(dir, overrides, program);
  const log = createLogger({ fields: { component: 'sidecar', 'entity-id': config.entityId } });
  const lock = lockConfigDir(dir, log);
  // The whole dir, as `check DIR` and every reload judge it: sidecar.json alone let a start run
  // what the first reload then refused, a server entry check calls broken included (review s22).
  const snapshot = ConfigSnapshot.take(dir);
  const verdict = await checkSidecarDir(dir, overrides, config);
  if (verdict.refuses) throw new LocalError('invalid-config', `Sidecar config refused:\n${describedProblems(verdict.bad).join('\n')}`);
  log.info('Sidecar starting', { worker: config.worker, configDir: dir, user: config.user });
  logProblemsLetThrough(log, verdict);
  keepServingOnUnexpectedErrors(log);
  // A descriptor without close-on-exec (a shell's pipe, or V8's own profiling files, which it
  // writes to for the life of the process) is never closed here: every spawn masks it instead.
  const inheritable = inheritableDescriptors();
  // Nothing for a user to do (each spawn masks them), so it is for whoever debugs a launch.
  if (inheritable.length > 0) log.debug('Descriptors without close-on-exec are kept from every server', { fds: inheritable });
  const sidecar = await startSidecar(config, log, undefined, snapshot);
  // Said at start, not first at an agent's launch: the probe's verdict is cached, so the first
  // contained launch reads it instead of probing again.
  if (process.platform === 'linux') {
    void bubblewrapProbe()().then((availability) => {
      if (!availability.available) log.warn('Containment unavailable: servers that need it will be refused until it is fixed (switchyard doctor says how)', { why: availability.message });
    });
  }
  // A changed config dir applies without a restart (or is refused, the old one kept).
  const watch = watchSidecarConfig({ dir, sidecar, config, snapshot, overrides, log });
  stopOnSignals(async () => {
    log.info('Sidecar stopping');
    watch.close();
    await sidecar.stop();
    lock?.release();
  });
  await new Promise<never>(() => {});
  return 0;
}

/**
 * One sidecar per config dir: a second one links with the same key, and the worker takes each
 * newer link in place of the other, so the two knock each other off every few seconds, failing
 * every channel each time. A dir the sidecar may not write to (one kept read-only for it) is run
 * unlocked: its files are read, never written.
 */
function lockConfigDir(dir: string, log: Logger): StateDirLock | undefined {
  try {
    return lockStateDir(dir, 'switchyard sidecar', { noun: 'Config dir', fix: 'stop it: two sidecars of one host knock each other\'s link off' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw error;
    log.debug('Config dir not locked: this user may not write to it', { dir, code });
    return undefined;
  }
}

export async function runProfilesCommand(argv: string[], program: Program = FULL_CLI): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'config-dir': { type: 'string' }, json: { type: 'boolean' } } });
  const store = new TrustProfileStore(join(configDirFrom(values, program), 'trust-profiles'));
  const listing = await store.list();
  if (values.json) {
    process.stdout.write(JSON.stringify(listing, null, 2) + '\n');
  } else if (listing.length === 0) {
    process.stdout.write('No trust profiles in trust-profiles/\n');
  } else {
    for (const entry of listing) {
      process.stdout.write('error' in entry ? `${entry.ref}  ERROR ${entry.error}\n` : `${entry.ref}  ${entry.revision}\n`);
    }
  }
  return listing.some((e) => 'error' in e) ? 1 : 0;
}
