/**
 * SidecarAudit: the host's side of the audit log. Each hosted channel gets a `CallLedger` scoped
 * to its agent, server and this host, whose parent trace context is the one the worker sent (in
 * each call's `_meta.traceparent`, else the channel request's `traceparent`), so a call's sidecar
 * line has the trace id of its worker line. Every channel open this host refuses (a server it
 * does not list, a stale or missing trust profile, containment it cannot apply, a launch that
 * failed, …) is written at `warn` with the agent and the reason: the workstation's owner sees
 * what was refused here, not only the worker's operator. The host's link to the worker is on the
 * record too: each time it comes up, each end, with why and how long it was up, and each time the
 * worker refuses it, so the owner sees when the worker could reach this machine.
 *
 * @module
 */
import type { AuditLog } from '../../shared/audit/audit-log.ts';
import { CallLedger } from '../../shared/audit/call-ledger.ts';
import type { McpConnection } from '../../shared/connection-request.ts';
import { WireError } from '../../shared/errors.ts';
import { linkEndOf, type LinkCloseInfo } from '../../shared/link/link-types.ts';
import { childSpan, parseTraceparent } from '../../shared/trace-context.ts';

export class SidecarAudit {
  readonly log: AuditLog;
  readonly #entityId: string;

  constructor(log: AuditLog, entityId: string) {
    this.log = log;
    this.#entityId = entityId;
  }

  /** The ledger of one hosted channel. */
  ledger(connection: McpConnection): CallLedger {
    return new CallLedger(this.log, {
      agent: connection.agent ?? null,
      server: connection['server-name'],
      host: this.#entityId,
      era: connection.era ?? 'legacy',
      ...(connection.session !== undefined ? { session: connection.session } : {}),
      parent: parseTraceparent(connection.traceparent),
    });
  }

  /** A channel open refused with `error`; the request is read loosely, it may be what was wrong. */
  openRefused(request: unknown, error: WireError): void {
    const connection = (request as { connection?: Record<string, unknown> } | null)?.connection ?? {};
    const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 128) : null);
    const span = childSpan(parseTraceparent(connection.traceparent));
    this.log.record({
      event: 'open',
      agent: text(connection.agent),
      server: text(connection['server-name']),
      host: this.#entityId,
      method: null,
      decision: error.reason === 'denied-by-policy' ? 'denied-by-policy' : 'refused',
      outcome: 'error',
      reason: error.reason,
      durationMs: 0,
      era: connection.era === 'modern' ? 'modern' : 'legacy',
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
    });
  }

  /** This host's link to the worker came up (the worker accepted its proof). */
  linked(): void {
    this.log.record({ event: 'link', agent: null, server: null, host: this.#entityId, method: null, decision: 'allowed', outcome: 'ok', durationMs: 0 });
  }

  /** The worker refused this host's link: its stable reason, and the check it says the request failed. */
  linkRefused(reason: string, check: string | null): void {
    this.log.record({ event: 'link', agent: null, server: null, host: this.#entityId, method: null, decision: 'refused', outcome: 'error', reason, ...(check !== null ? { check } : {}), durationMs: 0 });
  }

  /**
   * The link ended, `upMs` after it came up: `closed` by the worker, `lost` (the socket dropped),
   * `dead` (keepalive silence), `shutdown` (this sidecar stopping), or the reason this end
   * refused the worker's frames for.
   */
  linkEnded(info: LinkCloseInfo, upMs: number): void {
    const ended = linkEndOf(info, 'shutdown');
    this.log.record({ event: 'link', agent: null, server: null, host: this.#entityId, method: null, decision: 'allowed', outcome: 'ok', ended, durationMs: upMs });
  }

  /** `handler` with every refusal it throws on the record (then thrown on, to the worker). */
  audited<C, T>(handler: (request: unknown, channel: C) => Promise<T>): (request: unknown, channel: C) => Promise<T> {
    return async (request, channel) => {
      try {
        return await handler(request, channel);
      } catch (error) {
        this.openRefused(request, error instanceof WireError ? error : new WireError('launch-failed', 'The host failed to open the channel'));
        throw error;
      }
    };
  }
}
