/**
 * The sidecar's production wiring, in one place (upstream WorkspacesTransportComposition, M3):
 * one process executor, the trust profile store, the per-session policy cache, the
 * RemoteMcpHostHandler registered on a production McpTransportListener, and (given a worker URL
 * and the host key) the link client that serves that listener. The CLI and the tests build the sidecar
 * through this function, so what is tested is what runs.
 *
 * @module
 */
import { join } from 'node:path';
import type { ChannelOpenHandler } from '../../shared/link/link-endpoint.ts';
import { silentLogger, type Logger } from '../log.ts';
import { LinkClient, type LinkClientOptions } from '../link/link-client.ts';
import type { HostKey } from '../link/host-key.ts';
import { ProcessExecutor, type ProcessExecutorOptions } from '../process/process-executor.ts';
import { PolicyCache, type CompileOptions } from '../sandbox/index.ts';
import { TrustProfileStore } from '../trust/profile-store.ts';
import { McpTransportListener } from './mcp-transport-listener.ts';
import { DEFAULT_INSTANCE_IDLE_SECONDS, LegacyInstancePool } from './modern/legacy-instance-pool.ts';
import { RemoteMcpHostHandler, type RemoteMcpHostHandlerOptions } from './remote-mcp-host-handler.ts';
import { auditFromConfig } from '../../shared/audit/audit-from-config.ts';
import type { AuditConfig } from '../../shared/audit/audit-config.ts';
import type { AuditWrite } from '../../shared/audit/audit-log.ts';
import { SidecarAudit } from '../audit/sidecar-audit.ts';
import { DEFAULT_WARM_POOL, WarmPool, type WarmPoolBudget } from './warm-pool.ts';

export interface SidecarCompositionConfig {
  /** The sidecar config dir: mcp-servers/, users/, machines/, trust-profiles/. */
  configDir: string;
  /** This host's entity id (selects `machines/<entity-id>/`). */
  entityId: string;
  /** Selects `users/<user>/`. */
  user: string;
  /** Worker base URL and host key; without them there is no link client (all-in-one, tests). */
  worker?: string;
  key?: HostKey;
  log?: Logger;
  executor?: ProcessExecutorOptions;
  compile?: Omit<CompileOptions, 'revision'>;
  /** `sidecar.json` `"sandbox"`: the size cap of each sandbox's private `/tmp` and `/dev/shm`. */
  sandbox?: { readonly tmpSizeMib: number };
  env?: RemoteMcpHostHandlerOptions['env'];
  /** sidecar.json's `"trust-profile"` floor and `"allow-uncontained"`; none = no floor, no uncontained launch. */
  trust?: RemoteMcpHostHandlerOptions['trust'];
  /** Link timings and backoff, for tests. */
  link?: Pick<LinkClientOptions, 'endpoint' | 'backoff' | 'onLinked'>;
  /** sidecar.json `"modern-instance-idle-seconds"`: how long a modern agent's idle legacy instance lives (fractions for tests). */
  modernInstanceIdleSeconds?: number;
  /** sidecar.json `"audit"` and where its lines go (stderr or the configured file, opened by the caller); no audit lines without `write`. */
  audit?: { config?: AuditConfig; write: AuditWrite };
  /** sidecar.json `"warm-pool"`, what it leaves out taken from `DEFAULT_WARM_POOL`; absent: no pool (in-process hosts, tests). */
  warmPool?: { size?: number; maxInstances?: number; idleSeconds?: number; budget?: WarmPoolBudget };
}

export interface SidecarComposition {
  readonly executor: ProcessExecutor;
  readonly profiles: TrustProfileStore;
  readonly policies: PolicyCache;
  readonly handler: RemoteMcpHostHandler;
  /** The legacy instances serving modern agents; ended on `stop`. */
  readonly modernInstances: LegacyInstancePool;
  /** Pre-spawned instances for legacy sessions; ended on `stop`. */
  readonly warmPool: WarmPool;
  /** Every listener the sidecar answers channel opens with; today the MCP one. */
  readonly listeners: { readonly mcp: McpTransportListener };
  /** The link endpoint's channel-open handler (the MCP listener's). */
  readonly onOpen: ChannelOpenHandler;
  /** Present when the config names a worker and a host key. */
  readonly link: LinkClient | null;
  /** Starts dialling the worker (no-op without a link client). */
  start(): void;
  /** Stops the link, ends every hosted server and waits for their process trees. */
  stop(): Promise<void>;
}

export function createSidecarComposition(config: SidecarCompositionConfig): SidecarComposition {
  const log = config.log ?? silentLogger;
  const executor = new ProcessExecutor({ logger: log, ...config.executor });
  const profiles = new TrustProfileStore(join(config.configDir, 'trust-profiles'));
  const policies = new PolicyCache();
  const configured = config.audit === undefined
    ? null
    : auditFromConfig(config.audit.config, { component: 'sidecar', write: config.audit.write, log });
  const audit = configured === null ? undefined : new SidecarAudit(configured.audit, config.entityId);
  const modernInstances = new LegacyInstancePool({ idleMs: (config.modernInstanceIdleSeconds ?? DEFAULT_INSTANCE_IDLE_SECONDS) * 1000, log });
  const warm = config.warmPool === undefined ? { ...DEFAULT_WARM_POOL, size: 0 } : { ...DEFAULT_WARM_POOL, ...config.warmPool };
  const warmPool = new WarmPool({ size: warm.size, maxInstances: warm.maxInstances, idleMs: warm.idleSeconds * 1000, log, ...(warm.budget ? { budget: warm.budget } : {}) });
  const handler = new RemoteMcpHostHandler({
    modernInstances,
    warmPool,
    configDir: config.configDir,
    entityId: config.entityId,
    user: config.user,
    executor,
    profiles,
    policies,
    log,
    // Every compile knows the config dir, so no sandbox ever sees the host key (DESIGN §5).
    compile: {
      configDir: config.configDir,
      log,
      ...(config.sandbox ? { tmpSizeBytes: config.sandbox.tmpSizeMib * 1024 * 1024 } : {}),
      ...config.compile,
    },
    ...(config.env ? { env: config.env } : {}),
    ...(config.trust ? { trust: config.trust } : {}),
    ...(audit !== undefined ? { audit } : {}),
  });
  const open = (request: unknown, channel: Parameters<typeof handler.open>[1]) => handler.open(request, channel);
  const mcp = new McpTransportListener([audit !== undefined ? audit.audited(open) : open]);
  const link =
    config.worker !== undefined && config.key !== undefined
      ? new LinkClient({ worker: config.worker, entityId: config.entityId, key: config.key, onOpen: mcp.onOpen, log, ...config.link })
      : null;
  return {
    executor,
    profiles,
    policies,
    handler,
    modernInstances,
    warmPool,
    listeners: { mcp },
    onOpen: mcp.onOpen,
    link,
    start: () => link?.start(),
    async stop() {
      await link?.stop();
      await mcp.closeAll();
      await warmPool.dispose();
      await modernInstances.dispose();
      await executor.disposeAll();
      await configured?.exporter?.flush();
    },
  };
}
