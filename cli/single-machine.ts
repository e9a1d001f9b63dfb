/**
 * The single-machine deployment, `switchyard worker --runtime node --config worker.json
 * [--config-dir DIR]`: the worker under Node, and servers bound to a top-level `{"type":"local"}`
 * launched in this same process through the sidecar's own composition (RemoteMcpHostHandler,
 * trust profiles, policy cache, process executor) over an in-memory channel pair: no link, no
 * socket, no second process. It is upstream note 003's "bound local → in-process, no round trip".
 *
 * The servers come from DIR (the same layout as a sidecar's: `mcp-servers/mcp.json`,
 * `users/<user>/…`, `machines/<entity-id>/…`, `trust-profiles/`), and run under the agent's
 * trust profile exactly as on a linked workstation, under the host's own floor: `DIR/sidecar.json`,
 * when present, is read for its `"trust-profile"` and `"allow-uncontained"` keys only (no worker
 * URL or key is needed here); without either, a server the agent names no profile for is refused.
 * Servers bound to hosts or edge-direct HTTP work as on any worker.
 *
 * Composed here because `cli/` is the one layer that may import both `worker/` and `sidecar/`.
 *
 * @module
 */
import { createInMemoryChannelPair } from '../shared/channel-transport.ts';
import type { McpConnectionRequest } from '../shared/connection-request.ts';
import { loadHostTrustConfig, osUserName } from '../sidecar/config/sidecar-config.ts';
import { createSidecarComposition, type SidecarComposition } from '../sidecar/host/composition.ts';
import type { OwnFile } from '../sidecar/sandbox/config-dir-exposure.ts';
import { silentLogger, type Logger } from '../sidecar/log.ts';
import type { ProcessExecutorOptions } from '../sidecar/process/process-executor.ts';
import type { WorkerConfig } from '../worker/config/worker-config.ts';
import type { OAuthRuntime } from '../worker/app.ts';
import type { WorkerLogger } from '../worker/log.ts';
import type { AuditWrite } from '../shared/audit/audit-log.ts';
import { startNodeWorker, type NodeWorker } from '../worker/adapters/node/node-worker.ts';
import { WireError } from '../shared/errors.ts';

/** The entity id the in-process host answers as (selects `machines/<id>/mcp-servers/`). */
export const LOCAL_ENTITY_ID = 'this-machine';

export interface SingleMachineOptions {
  /** Parsed with runtime `node`. */
  config: WorkerConfig;
  /** The servers' config dir: mcp-servers/, users/, machines/, trust-profiles/. */
  configDir: string;
  host?: string;
  port?: number;
  /** Selects `users/<user>/`; the OS user by default. */
  user?: string;
  log?: WorkerLogger;
  hostLog?: Logger;
  executor?: ProcessExecutorOptions;
  /** Where the worker's and the in-process host's audit lines go; none when absent. */
  auditWrite?: AuditWrite;
  /** The runtime's part of OAuth (`oauth-state.ts`: the built-in server's state file). */
  oauth?: OAuthRuntime;
  /** The worker config, its state dir and audit file: kept out of every sandbox, as the config dir is (`ownFiles` there). */
  ownFiles?: readonly OwnFile[];
}

export interface SingleMachine {
  url: string;
  node: NodeWorker;
  /** The in-process host; null until a server bound to a top-level `{"type":"local"}` needs it. */
  host: SidecarComposition | null;
  /** Ends every agent session (and so every local server process tree), then the HTTP server. */
  close(): Promise<void>;
}

export async function startSingleMachine(options: SingleMachineOptions): Promise<SingleMachine> {
  const { config } = options;
  const createHost = (): SidecarComposition => {
    const trust = loadHostTrustConfig(options.configDir);
    return createSidecarComposition({
      configDir: options.configDir,
      entityId: LOCAL_ENTITY_ID,
      user: options.user ?? osUserName(),
      log: options.hostLog ?? silentLogger,
      trust: { ...(trust.trustFloor !== undefined ? { floor: trust.trustFloor } : {}), allowUncontained: trust.allowUncontained },
      // No sidecar and no host key here: a refusal names the dir for what it is.
      compile: { configDirRole: 'single-machine', ...(options.ownFiles !== undefined ? { ownFiles: options.ownFiles } : {}) },
      ...(options.executor !== undefined ? { executor: options.executor } : {}),
      ...(options.auditWrite !== undefined ? { audit: { ...(config.audit !== undefined ? { config: config.audit } : {}), write: options.auditWrite } } : {}),
    });
  };
  // Made at start for a config with local servers; else at the first local open, as a reload may
  // bind the first one (review s22: accepted, then every session was refused "no local host").
  let host: SidecarComposition | null = Object.values(config.servers).some((s) => s.executor.type === 'local') ? createHost() : null;
  const localHost = async (request: McpConnectionRequest) => {
    if (host === null) {
      try {
        host = createHost();
      } catch (error) {
        throw new WireError('launch-failed', `The local host cannot start: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const [workerEnd, hostEnd] = createInMemoryChannelPair();
    try {
      await host.onOpen(request, hostEnd);
    } catch (error) {
      await hostEnd.close();
      throw error;
    }
    return workerEnd;
  };
  const node = await startNodeWorker({
    config,
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    localHost,
    // A host not made yet keeps nothing to end.
    localRoster: (roster) => host?.keepRoster(roster),
    ...(options.log !== undefined ? { log: options.log } : {}),
    ...(options.auditWrite !== undefined ? { auditWrite: options.auditWrite } : {}),
    ...(options.oauth !== undefined ? { oauth: options.oauth } : {}),
  });
  let closing: Promise<void> | undefined;
  return {
    url: node.url,
    node,
    get host() {
      return host;
    },
    close() {
      closing ??= (async () => {
        await node.close();
        await host?.stop();
      })();
      return closing;
    },
  };
}
