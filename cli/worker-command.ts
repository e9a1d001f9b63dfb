/**
 * `switchyard worker --config FILE`: the edge worker under Deno by default (what production edge
 * hosts run), or with `--runtime node` the single-machine deployment (`single-machine.ts`), which
 * also launches top-level `{"type":"local"}` servers in-process from `--config-dir DIR` (the
 * config file's folder by default).
 *
 * The config is read and parsed once, by the function `switchyard check` and the deployed bundle
 * use, for the runtime that will run it.
 *
 * @module
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalError } from '../shared/errors.ts';
import { parseWorkerConfigText, type WorkerConfig } from '../worker/config/worker-config.ts';
import { listeningFields } from '../worker/listening-fields.ts';
import { SERVER_KEYS_ENV } from '../worker/auth/oauth/server-key.ts';
import { ValidationError } from '../shared/validation.ts';
import { ConfigFileError } from '../sidecar/config/config-file-problems.ts';
import { createLogger, type Logger } from '../sidecar/log.ts';
import { parseLogLevel } from '../shared/log.ts';
import { auditWriter } from '../sidecar/audit/audit-writer.ts';
import { type DenoWorkerProcess, spawnDenoWorker } from './deno-worker-process.ts';
import { stopOnSignals } from './signals.ts';
import { hostName, listenAddress } from './listen-address.ts';
import { isLoopbackHostname } from '../shared/loopback.ts';
import { watchWorkerConfigFile } from './worker-config-watch.ts';
import { keepServingOnUnexpectedErrors } from './unexpected-errors.ts';
import { locateSyntaxError } from './config-file-read.ts';
import { fileReadProblem } from '../shared/file-read-problem.ts';
import { lockStateDir } from './state-dir-lock.ts';

/** The built-in OAuth server writes its state dir: one worker per dir (`state-dir-lock.ts`). */
function lockOAuthState(config: WorkerConfig, stateDir: string) {
  if (config.oauth?.['built-in'] === undefined) return undefined;
  // Made as the OAuth store makes it (0700), which opens it only later.
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  return lockStateDir(stateDir, 'switchyard worker');
}

function readConfigText(configFile: string): string {
  try {
    return readFileSync(configFile, 'utf8');
  } catch (error) {
    throw new LocalError('invalid-config', `Cannot read the worker config "${configFile}": ${fileReadProblem(error)}`);
  }
}

/** The config, or what `switchyard check` would say of the file (heading, one line per problem). */
function parseConfigFile(configFile: string, text: string, runtime: 'edge' | 'node'): WorkerConfig {
  try {
    return parseWorkerConfigText(text, { runtime });
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigFileError(configFile, 'worker config', locateSyntaxError(error.issues, text));
    throw error;
  }
}

export async function runWorkerCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      'config-dir': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      runtime: { type: 'string' },
      'state-dir': { type: 'string' },
    },
  });
  if (values.config === undefined) throw new LocalError('usage', 'Missing --config FILE: the worker config (see switchyard worker --help)');
  const configFile = resolve(values.config);
  const { host, hostSource, port } = listenAddress(values);
  // A shell may export HOST unasked (tcsh sets it to the machine's name): say where it came from.
  if (hostSource !== '' && !isLoopbackHostname(hostName(host))) {
    process.stderr.write(`note: the worker listens on "${host}"${hostSource}, which this machine's network reaches; --host 127.0.0.1 keeps it on this machine\n`);
  }
  // `edge` is what check calls Deno's runtime (the edge bundle's): the same one here.
  const runtime = values.runtime === 'edge' ? 'deno' : values.runtime ?? 'deno';
  if (runtime !== 'deno' && runtime !== 'node') throw new LocalError('usage', `Unknown runtime "${runtime}": expected deno (also called edge) or node`);
  if (values['config-dir'] !== undefined && runtime !== 'node') {
    throw new LocalError('usage', '--config-dir is for the single-machine mode: add --runtime node, or run a sidecar with switchyard sidecar --config-dir DIR');
  }
  const text = readConfigText(configFile);
  // The built-in OAuth server's state (clients, grants, tokens, all hashed) lives beside the config by default.
  const stateDir = resolve(values['state-dir'] ?? dirname(configFile));

  if (runtime === 'node') {
    const config = parseConfigFile(configFile, text, 'node');
    const lock = lockOAuthState(config, stateDir);
    const { startSingleMachine } = await import('./single-machine.ts');
    const { nodeOAuthRuntime } = await import('./oauth-state.ts');
    const oauth = await nodeOAuthRuntime(config, stateDir);
    const auditFile = config.audit?.file === undefined ? undefined : resolve(dirname(configFile), config.audit.file);
    const { singleMachineOwnFiles } = await import('./single-machine-own-files.ts');
    const ownFiles = singleMachineOwnFiles(configFile, { stateDir, ...(auditFile !== undefined ? { auditFile } : {}) });
    const configDir = resolve(values['config-dir'] ?? dirname(configFile));
    const { systemExposureReason, systemPathsHere } = await import('../sidecar/sandbox/index.ts');
    const hostLog = createLogger({ fields: { component: 'local-host' } });
    const shown = systemExposureReason(configDir, ownFiles, systemPathsHere(), 'single-machine');
    if (shown !== null) hostLog.warn('Every contained launch will be refused', { why: shown });
    await checkLocalServers(config, configDir, hostLog);
    const machine = await startSingleMachine({
      config,
      configDir,
      host,
      port,
      log: createLogger({ fields: { component: 'worker' } }),
      hostLog,
      ownFiles,
      auditWrite: auditWriter(auditFile, parseLogLevel(process.env.SWITCHYARD_LOG_LEVEL), configFile, createLogger({ fields: { component: 'worker' } })),
      ...(oauth !== undefined ? { oauth } : {}),
    });
    // This process hosts the local servers itself: one agent's bug must not end every session.
    keepServingOnUnexpectedErrors(createLogger({ fields: { component: 'local-host' } }));
    lock?.describe(`switchyard worker on ${machine.url}`);
    process.stdout.write(JSON.stringify({ event: 'listening', url: machine.url }) + '\n');
    createLogger({ fields: { component: 'worker' } }).info(
      'Worker listening',
      listeningFields(config, { url: machine.url, config: configFile, stateDir: oauth !== undefined ? stateDir : null, oauthKeysGiven: Boolean(process.env[SERVER_KEYS_ENV]?.trim()) }),
    );
    const watch = watchWorkerConfigFile(configFile, text, machine.node.worker, createLogger({ fields: { component: 'worker' } }));
    stopOnSignals(() => {
      watch.close();
      return machine.close();
    });
    await new Promise<never>(() => {});
  }
  // Validated here first so every problem is printed as path: message before Deno starts.
  const edgeConfig = parseConfigFile(configFile, text, 'edge');
  const lock = lockOAuthState(edgeConfig, stateDir);
  // Taken over before Deno starts (a signal is handled no sooner than the spawn below returns): a
  // signal's default action would end this process and leave Deno running until it saw its stdin end.
  let running: DenoWorkerProcess | undefined;
  let stopping = false;
  stopOnSignals(async () => {
    stopping = true;
    await running?.stop();
  });
  const worker = spawnDenoWorker({ configFile, host, port, ...(edgeConfig.oauth?.['built-in'] !== undefined ? { stateDir } : {}) });
  running = worker;
  // Deno watches its config file itself; SIGHUP ("reload now") is passed on to it.
  process.on('SIGHUP', () => worker.child.kill('SIGHUP'));
  const url = await worker.listening;
  lock?.describe(`switchyard worker on ${url}`);
  process.stdout.write(JSON.stringify({ event: 'listening', url }) + '\n');
  const code = await worker.exited;
  // Killed or crashed, Deno says nothing itself: the operator's last line would be an unrelated one.
  if (!stopping) createLogger({ fields: { component: 'worker' } }).error('The worker stopped on its own: its Deno process ended, and every agent session with it', { exitCode: code, ...(code > 128 ? { signal: signalName(code - 128) } : {}) });
  return code;
}

/** `SIGKILL` for 9: the signal a shell's 128 + N exit code stands for. */
function signalName(number: number): string | undefined {
  return Object.entries(constants.signals).find(([, n]) => n === number)?.[0];
}

/**
 * The servers the single-machine mode runs, read at start as a sidecar reads them at its own: a
 * file that cannot be read ends the start with its problem, as it ends a sidecar's, where the
 * mode started without a word and told each agent to see a sidecar log it does not have; and a
 * server bound to this machine that no file defines is said once, as it is refused to every agent.
 */
async function checkLocalServers(config: WorkerConfig, configDir: string, log: Logger): Promise<void> {
  const local = Object.keys(config.servers).filter((name) => config.servers[name]!.executor.type === 'local');
  if (local.length === 0) return;
  const [{ hostServers }, { LOCAL_ENTITY_ID }, { osUserName }] = await Promise.all([import('./host-servers.ts'), import('./single-machine.ts'), import('../sidecar/config/sidecar-config.ts')]);
  const read = hostServers(configDir, LOCAL_ENTITY_ID, osUserName());
  if (read.problems.length > 0) {
    throw new LocalError('invalid-config', read.problems.map((p) => `${p.file}: ${p.message}`).join('\n') + `\nThe servers this machine runs are defined there: fix it (switchyard check --runtime node ${configDir} says what is wrong)`);
  }
  const undefinedHere = local.filter((name) => !read.servers.has(name));
  if (undefinedHere.length > 0) log.warn('Servers bound to this machine that no mcp.json of its config dir defines: every agent gets server-not-found for them', { servers: undefinedHere, configDir });
}
