/**
 * The host-link registry on Workers (DESIGN §8): entity id → the `HostLink` Durable Object named
 * `idFromName(entity id)`, which holds that host's link wherever it landed. Any isolate opens a
 * channel through it: a relay socket to the object (`channel-relay.ts`), then a channel-open on
 * that socket under the caller's deadline. The object refuses at once with `host-offline` when the
 * host has no live link, so an agent never waits for a link that may not come.
 *
 * `status()` is synchronous, as `/healthz` reads it; `refresh()` asks each host's object first,
 * whose answer also carries how the latest opens of its servers went (`openOutcomes`) and its
 * recent failures (`recentErrors`): on Workers they happen there, not in the isolate that reports them.
 * Links attach inside their object, never here.
 *
 * @module
 */
import type { ChannelTransport } from '../../../shared/channel-transport.ts';
import { isFailureReason, LocalError, WireError } from '../../../shared/errors.ts';
import { LinkEndpoint, type LinkLogger, type OpenChannelOptions } from '../../../shared/link/link-endpoint.ts';
import { ENTITY_ID_HEADER } from '../../../shared/link/link-types.ts';
import type { HostLinkRegistry, HostLinkStatus } from '../../link/host-link-registry.ts';
import { RELAY_FEATURES, RELAY_PATH, relayLog } from './channel-relay.ts';
import type { WorkerLogger } from '../../log.ts';
import { OpenOutcomeEntry, type OpenOutcomes } from '../../status/open-outcomes.ts';
import { RecentErrorEntry, type RecentErrors } from '../../status/recent-errors.ts';
import * as z from '../../../shared/zod.ts';
import { acceptedFrameSocket } from './websocket-frame-socket.ts';
import { webSocketOf, type DurableObjectNamespace, type DurableObjectStub } from './workers-runtime.ts';

/** The origin of requests to a host's object: objects are reached through bindings, never DNS. */
export const HOST_OBJECT_ORIGIN = 'https://host-link.switchyard';
export const STATUS_PATH = '/status';
/**
 * On a relay request: the opener keeps its opens' outcomes and failures itself, and reads the
 * host object's with its status (the edge's registry), so the object must not keep them too, or
 * each would show twice.
 */
export const OPENER_RECORDS_HEADER = 'X-Switchyard-Opener-Records';

const OpenOutcomeList = z.array(OpenOutcomeEntry).check(z.maxLength(100_000));
const RecentErrorList = z.array(RecentErrorEntry).check(z.maxLength(1_000));

/** Status reads in flight at once, so `/healthz` for many hosts stays within subrequest limits. */
const STATUS_CONCURRENCY = 50;

export function hostObject(namespace: DurableObjectNamespace, entityId: string): DurableObjectStub {
  return namespace.get(namespace.idFromName(entityId));
}

export class DurableObjectHostLinkRegistry implements HostLinkRegistry {
  readonly #namespace: DurableObjectNamespace;
  readonly #log: LinkLogger | undefined;
  /** Each host's line as last read from its object, in the order first read. */
  readonly #snapshot = new Map<string, HostLinkStatus>();
  readonly #outcomes: OpenOutcomes | undefined;
  readonly #errors: RecentErrors | undefined;

  /** `openOutcomes`, `recentErrors`: where what each host's object reports goes, for `/healthz`. */
  constructor(namespace: DurableObjectNamespace, options: { log?: WorkerLogger; openOutcomes?: OpenOutcomes; recentErrors?: RecentErrors } = {}) {
    this.#namespace = namespace;
    this.#log = options.log !== undefined ? relayLog(options.log) : undefined;
    this.#outcomes = options.openOutcomes;
    this.#errors = options.recentErrors;
  }

  async openChannel(entityId: string, request: unknown, options: OpenChannelOptions = {}): Promise<ChannelTransport> {
    let response: Response;
    try {
      response = await hostObject(this.#namespace, entityId).fetch(`${HOST_OBJECT_ORIGIN}${RELAY_PATH}`, {
        headers: { upgrade: 'websocket', [ENTITY_ID_HEADER]: entityId, ...(this.#outcomes !== undefined || this.#errors !== undefined ? { [OPENER_RECORDS_HEADER]: '1' } : {}) },
      });
    } catch (cause) {
      // The object was reset (a deploy), overloaded or unreachable: for the agent, the host is offline now.
      const message = cause instanceof Error ? cause.message.slice(0, 200) : String(cause);
      throw new WireError('host-offline', `Host "${entityId}" is unreachable: its Durable Object failed: ${message}`, { detail: { 'entity-id': entityId }, cause });
    }
    const ws = webSocketOf(response);
    if (ws === null) throw await refusalOf(response, entityId);
    const relay = new LinkEndpoint(acceptedFrameSocket(ws), { role: 'worker', peer: entityId, peerFeatures: RELAY_FEATURES, ...(this.#log !== undefined ? { log: this.#log } : {}) });
    try {
      return await relay.openChannel(request, options);
    } catch (error) {
      relay.close({ message: 'Channel open failed' });
      throw error;
    }
  }

  attach(): boolean {
    throw new LocalError('wrong-place', 'On Workers a link attaches inside its host\'s Durable Object, never in the registry of an agent\'s isolate');
  }

  status(): HostLinkStatus[] {
    return [...this.#snapshot.values()];
  }

  /** Reads every host's state from its object, at most `STATUS_CONCURRENCY` at a time. */
  async refresh(entityIds: readonly string[]): Promise<HostLinkStatus[]> {
    const out: HostLinkStatus[] = new Array(entityIds.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < entityIds.length; i = next++) out[i] = await this.#statusOf(entityIds[i]!);
    };
    await Promise.all(Array.from({ length: Math.min(STATUS_CONCURRENCY, entityIds.length) }, worker));
    // Merged, not replaced: an agent's /healthz asks for its own hosts only, and a report being
    // made at once for the admin must still find the others.
    for (const status of out) this.#snapshot.set(status['entity-id'], status);
    return out;
  }

  async #statusOf(entityId: string): Promise<HostLinkStatus> {
    const unknown = { 'entity-id': entityId, linked: false, since: null, channels: 0, roundTripMs: null };
    try {
      const response = await hostObject(this.#namespace, entityId).fetch(`${HOST_OBJECT_ORIGIN}${STATUS_PATH}`, { headers: { [ENTITY_ID_HEADER]: entityId } });
      if (!response.ok) return unknown;
      const { opens, errors, ...status } = (await response.json()) as HostLinkStatus & { opens?: unknown; errors?: unknown };
      // Checked, as anything read from elsewhere: an object of an older deployment has none.
      const reported = OpenOutcomeList.safeParse(opens ?? []);
      if (reported.success) this.#outcomes?.merge(reported.data);
      const failures = RecentErrorList.safeParse(errors ?? []);
      if (failures.success) this.#errors?.fromElsewhere(`host:${entityId}`, failures.data);
      return status;
    } catch {
      return unknown;
    }
  }
}

/** The host object's refusal (`{error:{reason,message}}`) as the `WireError` it stands for. */
async function refusalOf(response: Response, entityId: string): Promise<WireError> {
  const body = (await response.json().catch(() => null)) as { error?: { reason?: unknown; message?: unknown } } | null;
  const reason = body?.error?.reason;
  const message = body?.error?.message;
  if (isFailureReason(reason) && typeof message === 'string') return new WireError(reason, message, { detail: { 'entity-id': entityId } });
  return new WireError('host-offline', `Host "${entityId}" is unreachable: its Durable Object answered ${response.status}`, { detail: { 'entity-id': entityId } });
}
