/**
 * `switchyard start` (what `npm start` runs): the embedded default on one machine.
 *
 * - the worker under Deno on http://127.0.0.1:8787 (HOST / PORT override);
 * - one sidecar in this process, linked to it over the real reverse-HTTP link;
 * - demo servers from npm: server-everything, server-filesystem on `<state>/demo`, server-memory,
 *   all run under the contained `demo` trust profile (the demo folder read-write, no network);
 * - a token kept across restarts, printed with paste-ready client configs and written to
 *   `<state>/client-config.json`;
 * - the sidecar's host key, made on the first start and kept in `<state>/sidecar/host.key`; the
 *   generated worker config lists only its public key;
 * - `worker.json` and the sidecar's `sidecar.json`, `mcp.json` and `demo` profile written afresh
 *   on every start, a copy the user edited kept as `FILE.previous` and named on stderr
 *   (`generated-file.ts`);
 * - the built-in OAuth authorization server, its state in `<state>/worker/`, so clients that sign
 *   in themselves (VS Code, Cursor, Claude Code) connect with the URL alone and are approved on
 *   the consent page with the token. Claude's custom connectors and ChatGPT connect from the
 *   cloud, which cannot reach this loopback URL: `--public-url` names the https origin a tunnel
 *   forwards here, and the worker then calls itself by it (its sidecar still links on loopback).
 *
 * Ctrl-C (SIGINT) or SIGTERM stops the sidecar (ending every server process tree), then Deno.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { hostname, networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { rmSync, writeFileSync } from 'node:fs';
import { LocalError } from '../shared/errors.ts';
import { createLogger } from '../sidecar/log.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { profileRevisions } from './host-line.ts';
import { loadSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { bubblewrapProbe } from '../sidecar/sandbox/index.ts';
import { loadOrCreateHostKey } from '../sidecar/link/host-key.ts';
import { isLoopbackHostname } from '../shared/loopback.ts';
import { type DenoWorkerProcess, spawnDenoWorker } from './deno-worker-process.ts';
import { startSidecar } from './sidecar-command.ts';
import type { SidecarComposition } from '../sidecar/host/composition.ts';
import { keepServingOnUnexpectedErrors } from './unexpected-errors.ts';
import { stopOnSignals } from './signals.ts';
import { hostName, listenAddress } from './listen-address.ts';
import { parseLogLevel } from '../shared/log.ts';
import { sha256Hex } from '../shared/credentials.ts';
import { clientConfigs, ensureDir, ensureSecret, HOST_KEY_FILE, writeJson } from './state-dir.ts';
import { isAsGenerated, writeGeneratedJson } from './generated-file.ts';
import { watchSidecarConfig } from './sidecar-reload.ts';
import { ConfigSnapshot } from '../sidecar/config/config-snapshot.ts';
import type { ConfigWatch } from '../sidecar/config/config-watcher.ts';
import { lockStateDir } from './state-dir-lock.ts';

const DEMO_SERVERS = ['everything', 'filesystem', 'memory'] as const;
/** How long the banner waits for the sidecar's first link before printing anyway, with a warning. */
const LINK_WAIT_MS = 15_000;

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

function packageEntry(name: string): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve(`${name}/package.json`)), 'dist', 'index.js');
}

/** The host names agents may use in Host/Origin: loopback always, this machine's names when listening widely. */
function allowedHostNames(host: string): string[] {
  const names = ['localhost', '127.0.0.1', '[::1]'];
  if (host === '0.0.0.0' || host === '::') {
    names.push(hostname());
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) if (!a.internal) names.push(a.family === 'IPv6' ? `[${a.address}]` : a.address);
    }
  } else if (!names.includes(hostName(host))) {
    names.push(hostName(host));
  }
  return [...new Set(names)];
}

/**
 * Writes the sidecar's servers, host key and demo trust profile; sidecar.json follows once the
 * worker listens. The servers and the profile are generated afresh, an edited copy kept aside.
 */
async function writeSidecarFiles(stateDir: string) {
  const configDir = ensureDir(join(stateDir, 'sidecar'));
  const demoDir = ensureDir(join(stateDir, 'demo'));
  writeFileSync(join(demoDir, 'hello.txt'), 'Hello from the Switchyard demo folder. The filesystem server may read and write only here.\n');
  const { key } = await loadOrCreateHostKey(join(configDir, HOST_KEY_FILE));
  rmSync(join(configDir, 'host.secret'), { force: true }); // the shared secret of earlier versions, replaced by the key
  ensureDir(join(configDir, 'mcp-servers'));
  writeGeneratedJson(stateDir, join(configDir, 'mcp-servers', 'mcp.json'), {
    mcpServers: {
      everything: { command: process.execPath, args: [packageEntry('@modelcontextprotocol/server-everything'), 'stdio'] },
      filesystem: { command: process.execPath, args: [packageEntry('@modelcontextprotocol/server-filesystem'), demoDir] },
      memory: {
        command: process.execPath,
        args: [packageEntry('@modelcontextprotocol/server-memory')],
        env: { MEMORY_FILE_PATH: join(demoDir, 'memory.jsonl') },
      },
    },
  });
  ensureDir(join(configDir, 'trust-profiles'));
  writeGeneratedJson(stateDir, join(configDir, 'trust-profiles', 'demo.json'), {
    description: 'Demo: read-write on the demo folder only, no network',
    'filesystem-paths': [{ 'source-path': demoDir, 'access-mode': 'read-write' }],
    'network-capabilities': [],
    environment: { inherit: ['PATH', 'LANG'] },
  });
  return { configDir, key };
}

/**
 * `--public-url`: the https origin a tunnel or proxy forwards to this worker, for the clients that
 * connect from the cloud. An origin alone: the worker serves `/mcp` and OAuth from its root.
 */
function publicOrigin(value: string): string {
  const wrong = (problem: string) => new LocalError('usage', `Invalid --public-url "${value}": ${problem}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw wrong('not an absolute URL (e.g. https://yard.example.com)');
  }
  if (url.protocol !== 'https:') throw wrong('must be an https: URL, since Claude and ChatGPT connect only over TLS');
  if (url.username !== '' || url.password !== '') throw wrong('must not carry a user name or password');
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') throw wrong(`must be the worker's origin alone (${url.origin}), which it serves /mcp and OAuth from`);
  return url.origin;
}

export async function runStart(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { host: { type: 'string' }, port: { type: 'string' }, 'state-dir': { type: 'string' }, 'public-url': { type: 'string' } },
  });
  const publicUrl = values['public-url'] === undefined ? undefined : publicOrigin(values['public-url']);
  const { host, hostSource, port } = listenAddress(values);
  if (host !== '0.0.0.0' && host !== '::' && !isLoopbackHostname(hostName(host))) {
    throw new LocalError(
      'usage',
      `Cannot listen on "${host}"${hostSource}: the embedded sidecar links over plain http, which only this machine's loopback may carry; use 127.0.0.1 (the default), or HOST=0.0.0.0 to listen on every address`,
    );
  }
  const stateDir = ensureDir(resolve(values['state-dir'] ?? '.switchyard'));
  // Before any file is rewritten: a second start on this dir would rewrite the first one's configs
  // under it. The worker's OAuth state is a state dir of its own, which switchyard worker
  // --state-dir could also name.
  const lock = lockStateDir(stateDir, 'switchyard start');
  const workerState = ensureDir(join(stateDir, 'worker'));
  const workerLock = lockStateDir(workerState, 'switchyard start');
  // Quieter than the other commands by default: the banner is what a first run should see.
  const quiet = process.env.SWITCHYARD_LOG_LEVEL ? parseLogLevel(process.env.SWITCHYARD_LOG_LEVEL) : 'warn';
  const log = createLogger({ level: quiet, fields: { component: 'start' } });

  // The sidecar's own probe, started now and awaited only before the banner: it runs while Deno
  // starts, and its cached verdict is the one the first contained launch gets (no second probe).
  const containment = process.platform === 'linux' ? bubblewrapProbe()() : Promise.resolve(null);

  const token = ensureSecret(join(stateDir, 'agent.token'), 'sy_');
  const entityId = 'this-machine';
  const { configDir, key } = await writeSidecarFiles(stateDir);
  // As `sidecar host-entry` reports them for `host add` to record: so `agent add --trust-profile
  // NAME` on this worker.json pins what this host has, as on a worker that took a host's line.
  const hostProfiles = async (): Promise<Record<string, string>> => (await profileRevisions(configDir)).profiles;
  const demoRevision = async () => (await new TrustProfileStore(join(configDir, 'trust-profiles')).load('demo')).revision;
  const workerConfig = join(stateDir, 'worker.json');
  const tokenHash = await sha256Hex(token);
  const writeWorkerConfig = (revision: string, profiles: Record<string, string>) =>
    writeGeneratedJson(
      stateDir,
      workerConfig,
      {
        agents: [
          {
            name: 'you',
            'token-sha256': tokenHash,
            servers: [...DEMO_SERVERS],
            'trust-context': { 'trust-profile-ref': 'demo', 'trust-profile-revision': revision, containment: 'required' },
          },
        ],
        hosts: [{ 'entity-id': entityId, 'public-key': key.publicKey, 'trust-profiles': { ...profiles, demo: revision } }],
        servers: {
          everything: { executor: { type: 'user-computer-profile', 'entity-id': entityId, target: { type: 'local' } } },
          filesystem: { executor: { type: 'reverse-http', 'entity-id': entityId } },
          memory: { executor: { type: 'reverse-http', 'entity-id': entityId } },
        },
        // Its own sidecar, beside it on this machine, still dials it on loopback.
        ...(publicUrl !== undefined ? { 'public-url': publicUrl, 'link-on-loopback': true } : {}),
        // The public name too: a tunnel or proxy passes the Host the cloud client used.
        'allowed-hosts': [...allowedHostNames(host), ...(publicUrl !== undefined ? [new URL(publicUrl).host] : [])],
        // The consent page posts its form from the worker's own origin, whichever of these names the browser used.
        'allowed-origins': allowedHostNames(host),
        oauth: { 'built-in': {} },
      },
      0o600,
    );
  let pinned = await demoRevision();
  let reported = await hostProfiles();
  writeWorkerConfig(pinned, reported);
  /**
   * After the sidecar put an edit of its config dir in force (ending the servers a changed profile
   * affects), the worker is told the demo profile's new revision, as `host add` would tell it: one
   * person owns both files here, and new sessions would otherwise all be refused as stale.
   */
  const repin = async () => {
    const revision = await demoRevision();
    const profiles = await hostProfiles();
    if (revision === pinned && JSON.stringify(profiles) === JSON.stringify(reported)) return;
    if (!isAsGenerated(stateDir, workerConfig)) {
      if (revision !== pinned) process.stderr.write(`warning: trust profile "demo" changed, but ${workerConfig} was edited since start wrote it, so it still expects revision ${pinned}: new sessions are refused (trust-profile-stale) until it names ${revision}\n`);
      return;
    }
    writeWorkerConfig(revision, profiles);
    reported = profiles;
    if (revision === pinned) return;
    pinned = revision;
    process.stderr.write(`note: trust profile "demo" changed: the servers running under it were ended, and new sessions run under the edited profile (revision ${revision}); the next start regenerates it, keeping your copy as demo.json.previous\n`);
  };

  const sidecarLog = createLogger({ level: quiet, fields: { component: 'sidecar' } });
  let sidecar: Promise<SidecarComposition | undefined> = Promise.resolve(undefined);
  let running: DenoWorkerProcess | undefined;
  let watch: ConfigWatch | undefined;
  let stopping = false;
  const stopSidecar = async () => {
    watch?.close();
    await (await sidecar)?.stop();
  };
  // Taken over before Deno starts (a signal is handled no sooner than the spawn below returns) and
  // kept while the sidecar starts: a signal's default action would end this process and leave
  // Deno and the sidecar's servers running.
  stopOnSignals(async () => {
    stopping = true;
    process.stderr.write('\nStopping: ending every server process, then the worker…\n');
    await stopSidecar();
    await running?.stop();
  });
  const worker = spawnDenoWorker({ configFile: workerConfig, host, port, stateDir: workerState, env: { SWITCHYARD_LOG_LEVEL: quiet } });
  running = worker;
  // SIGHUP ("reload now") reaches both halves, as it does `switchyard worker` and `switchyard
  // sidecar`: the sidecar's config watch takes it in this process, Deno watches its own file.
  process.on('SIGHUP', () => worker.child.kill('SIGHUP'));
  // Until Deno listens, its exit is reported by `listening` (with the reason, above this process's error).
  const workerUrl = await worker.listening;
  for (const held of [lock, workerLock]) held.describe(`switchyard start on ${workerUrl}`);
  void worker.exited.then(async (code) => {
    // Ctrl-C reaches Deno too (same process group): its exit is then expected, not a failure.
    if (stopping) return;
    stopping = true;
    // Deno exits 0 only after a SIGINT or SIGTERM of its own, so even when its exit is seen before
    // this process's own Ctrl-C it is a stop, not a failure.
    // Said in plain words whatever the log level: this process ends because its worker did.
    if (code === 0) {
      process.stderr.write('switchyard: The worker was stopped (SIGTERM or SIGINT to Deno); stopping the sidecar\n');
      await stopSidecar();
      process.exit(0);
    }
    process.stderr.write(`switchyard: The worker exited unexpectedly with code ${code}${code > 128 ? ` (signal ${code - 128})` : ''}; stopping the sidecar\n`);
    await stopSidecar();
    process.exit(1);
  });
  // The sidecar dials the worker's real address; an unspecified listen address is reached via loopback.
  const dialUrl = workerUrl.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  // This process hosts the demo servers, like `switchyard sidecar`: one bad request costs a channel, not every session.
  keepServingOnUnexpectedErrors(sidecarLog);
  // A wildcard address is where the worker listens, not a URL an agent can use (its Host is refused).
  const localUrl = `${dialUrl}/mcp`;
  const agentUrl = publicUrl !== undefined ? `${publicUrl}/mcp` : localUrl;
  const configs = clientConfigs(agentUrl, token);
  let availability: Awaited<typeof containment>;
  try {
    // The demo profile is also the host's floor: a session the worker opens without naming it still runs contained.
    writeGeneratedJson(stateDir, join(configDir, 'sidecar.json'), { worker: dialUrl, 'entity-id': entityId, 'trust-profile': 'demo' });
    let linked!: () => void;
    const firstLink = new Promise<void>((resolve) => (linked = resolve));
    const sidecarConfig = loadSidecarConfig(configDir);
    const snapshot = ConfigSnapshot.take(configDir);
    const starting = startSidecar(sidecarConfig, sidecarLog, quiet, snapshot, () => linked());
    sidecar = starting.catch(() => undefined);
    const started = await starting;
    // Edits apply live, as under switchyard sidecar: a narrowed profile ends what runs under the wider one.
    watch = watchSidecarConfig({ dir: configDir, sidecar: started, config: sidecarConfig, snapshot, overrides: {}, log: sidecarLog, onReloaded: repin });
    availability = await containment;
    // "Running" means an agent's first request finds the host: before the link it would find the
    // demo servers unavailable (host-offline). A link that takes longer is reported, not waited out.
    const late = await Promise.race([firstLink.then(() => false), delay(LINK_WAIT_MS).then(() => true)]);
    if (late && !stopping) process.stderr.write(`warning: the sidecar has not linked to the worker after ${LINK_WAIT_MS / 1000} s: the demo servers show as unavailable until it does (run with SWITCHYARD_LOG_LEVEL=info to see why)\n`);
    // Before the banner that points at it, and inside this try: a file that cannot be written
    // (a folder in its place, a full disk) stops the start rather than leaving it running unannounced.
    writeJson(join(stateDir, 'client-config.json'), configs.generic, 0o600);
  } catch (error) {
    // Reported by the caller; Deno must not outlive the start that failed (it would keep this
    // process alive, holding the port, with the error already printed).
    stopping = true;
    await stopSidecar();
    await worker.stop();
    throw error;
  }
  // A signal while the sidecar started, or while containment was probed: the handler ends this
  // process once both are stopped, and no banner prints over its stopping.
  if (stopping) return new Promise<never>(() => {});

  if (availability !== null && !availability.available) {
    process.stderr.write(`warning: ${availability.message}; the demo servers run contained, so each will fail with containment-unavailable until then\n`);
  }

  if (host === '0.0.0.0' || host === '::') {
    process.stderr.write(`note: the worker listens on every network interface (HOST=${host}), over plain http: an agent on another machine sends its token readable, so use that only on a network you trust, or put TLS in front and pass --public-url\n`);
  }
  process.stdout.write(
    [
      '',
      'Switchyard is running.',
      '',
      `  Agent URL   ${agentUrl}`,
      ...(publicUrl !== undefined ? [`  Local URL   ${localUrl}  (what ${publicUrl} must be forwarded to)`] : []),
      `  Token       ${token}`,
      `  Status      ${dialUrl}/  (sign in with the token)`,
      `  Servers     ${DEMO_SERVERS.join(', ')} — contained by bubblewrap under trust profile "demo"`,
      '',
      `Client config (written to ${join(stateDir, 'client-config.json')}):`,
      JSON.stringify(configs.generic, null, 2),
      '',
      'VS Code (.vscode/mcp.json):',
      JSON.stringify(configs.vscode, null, 2),
      '',
      'Cursor (~/.cursor/mcp.json):',
      JSON.stringify(configs.cursor, null, 2),
      '',
      'Claude Desktop (claude_desktop_config.json, through mcp-remote):',
      JSON.stringify(configs.claudeDesktop, null, 2),
      '',
      `Stdio-only clients:  ${configs.mcpRemote}`,
      '',
      ...(publicUrl !== undefined
        ? [
            `Claude custom connectors (claude.ai, Desktop, mobile) and ChatGPT: add ${agentUrl} as a custom`,
            'connector and approve it on the consent page with the token above. They connect from the cloud:',
            `whatever forwards ${publicUrl} to ${dialUrl} (a tunnel, a TLS proxy) must be running.`,
          ]
        : [
            'Claude custom connectors (claude.ai, Desktop, mobile) and ChatGPT connect from the cloud: they',
            'need a public https URL, not this local one: forward one to this worker and restart with',
            '--public-url <that URL> (README: "Connecting agents").',
          ]),
      '',
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  await new Promise<never>(() => {});
  return 0;
}
