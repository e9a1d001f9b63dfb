/**
 * The Switchyard stack under test, started the way users start it: the worker under the real
 * Deno binary (`worker/adapters/deno.ts`, config file, `PORT=0`) and the sidecar through the real
 * CLI (`node --import tsx cli/main.ts sidecar --config-dir DIR`), linked over reverse
 * HTTP on 127.0.0.1, running server-everything from node_modules.
 *
 * Three agents, so that no measurement opens servers it does not measure:
 * - `plain`: `everything` with no trust context (ordinary launch);
 * - `boxed`: `everything` under the `bench-contained` profile (a read-write scratch dir, no
 *   network), so the sidecar launches it under bubblewrap;
 * - `counter`: `counted`, bound to a second host served by an in-process sidecar whose link
 *   endpoint counts frames (see `link-cost.ts`); the CLI sidecar never sees it.
 *
 * Every server the CLI sidecar spawns is adopted by the registry from its `Server spawned` log
 * line, so a crash of the sidecar cannot leave servers running.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrustProfileStore } from '../../sidecar/trust/profile-store.ts';
import { DENO, EVERYTHING, REPO, type BenchProcess, type ProcessRegistry } from './processes.ts';

export const TOKENS = { plain: 'bench-plain-token-0001', boxed: 'bench-boxed-token-0001', counter: 'bench-counter-token-01' } as const;
export const HOST = { entityId: 'bench-host', secret: 'bench-host-secret-000000000001' } as const;
export const COUNTED_HOST = { entityId: 'bench-counted', secret: 'bench-counted-secret-00000001' } as const;
const PROFILE = 'bench-contained';

export interface StackOptions {
  /** Extra flags for the sidecar's node (e.g. `--inspect=127.0.0.1:0` when profiling). */
  sidecarNodeFlags?: string[];
  /** Extra flags for `deno run` (e.g. `--inspect=127.0.0.1:0`). */
  denoFlags?: string[];
}

export interface Stack {
  url: string;
  dir: string;
  worker: BenchProcess;
  sidecar: BenchProcess;
  /** Pids of every server the CLI sidecar spawned, in order. */
  serverPids(): number[];
  /** Removes the scratch dir now; the registry also does it once every process has stopped. */
  dispose(): void;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Writes the configs, starts Deno and the CLI sidecar, and waits until the sidecar has linked. */
export async function startStack(registry: ProcessRegistry, options: StackOptions = {}): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  registry.afterStop(() => rmSync(dir, { recursive: true, force: true }));
  const configDir = join(dir, 'sidecar');
  const scratch = join(dir, 'scratch');
  for (const d of [configDir, scratch, join(configDir, 'mcp-servers'), join(configDir, 'trust-profiles')]) mkdirSync(d, { recursive: true });
  const server = { command: process.execPath, args: [EVERYTHING, 'stdio'] };
  writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { everything: server, counted: server } }));
  writeFileSync(
    join(configDir, 'trust-profiles', `${PROFILE}.json`),
    JSON.stringify({
      description: 'Benchmark: a scratch dir read-write, no network',
      'filesystem-paths': [{ 'source-path': scratch, 'access-mode': 'read-write' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH', 'LANG'] },
    }),
  );
  writeFileSync(join(configDir, 'host.secret'), HOST.secret, { mode: 0o600 });
  const revision = (await new TrustProfileStore(join(configDir, 'trust-profiles')).load(PROFILE)).revision;

  const onHost = (entityId: string) => ({ executor: { type: 'user-computer-profile', 'entity-id': entityId, target: { type: 'local' } } });
  const workerConfig = join(dir, 'worker.json');
  writeFileSync(
    workerConfig,
    JSON.stringify({
      agents: [
        { name: 'plain', 'token-sha256': sha256Hex(TOKENS.plain), servers: ['everything'] },
        {
          name: 'boxed',
          'token-sha256': sha256Hex(TOKENS.boxed),
          servers: ['everything'],
          'trust-context': { 'trust-profile-ref': PROFILE, 'trust-profile-revision': revision, containment: 'required' },
        },
        { name: 'counter', 'token-sha256': sha256Hex(TOKENS.counter), servers: ['counted'] },
      ],
      hosts: [
        { 'entity-id': HOST.entityId, 'secret-sha256': sha256Hex(HOST.secret) },
        { 'entity-id': COUNTED_HOST.entityId, 'secret-sha256': sha256Hex(COUNTED_HOST.secret) },
      ],
      servers: { everything: onHost(HOST.entityId), counted: onHost(COUNTED_HOST.entityId) },
    }),
  );

  // The worker logs at warn: per-session info lines are not what is being measured.
  const worker = registry.spawn(
    'worker (deno)',
    DENO,
    // `--quiet` would also hide the inspector's "Debugger listening" line that profiling reads.
    ['run', ...(options.denoFlags ?? ['--quiet']), '--no-prompt', '--allow-net', '--allow-env', `--allow-read=${REPO},${realpathSync(`${REPO}node_modules`)},${workerConfig}`, 'worker/adapters/deno.ts'],
    { SWITCHYARD_WORKER_CONFIG_FILE: workerConfig, HOST: '127.0.0.1', PORT: '0', NO_COLOR: '1', SWITCHYARD_LOG_LEVEL: 'warn' },
  );
  const url = (await worker.waitFor(/\{"event":"listening","url":"([^"]+)"\}/))[1]!;

  writeFileSync(join(configDir, 'sidecar.json'), JSON.stringify({ worker: url, 'entity-id': HOST.entityId, 'secret-file': 'host.secret' }));
  // Info level: `Server spawned` (with its pid) and `Linked to the worker` are info lines.
  const sidecar = registry.spawn(
    'sidecar (node)',
    process.execPath,
    [...(options.sidecarNodeFlags ?? []), '--import', 'tsx', 'cli/main.ts', 'sidecar', '--config-dir', configDir],
    { SWITCHYARD_LOG_LEVEL: 'info' },
  );
  const pids: number[] = [];
  let partial = '';
  sidecar.child.stderr!.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"Server spawned"')) continue;
      const pid = (JSON.parse(line) as { pid?: unknown }).pid;
      if (typeof pid === 'number') {
        pids.push(pid);
        registry.adopt(pid);
      }
    }
  });
  await sidecar.waitFor(/"msg":"Linked to the worker"/);
  return { url, dir, worker, sidecar, serverPids: () => [...pids], dispose: () => rmSync(dir, { recursive: true, force: true }) };
}
