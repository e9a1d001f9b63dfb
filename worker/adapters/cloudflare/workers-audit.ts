/**
 * The audit log on Workers: the same records as every runtime (`shared/audit/`), one JSON line
 * each on the isolate's log (`console.log`, a refusal `console.warn`: `workers-console.ts`; read
 * with `wrangler tail` or Workers Logs) at the log level. Workers have no file system, so a config with `audit.file` is refused when it is read
 * (`cloudflare-env.ts`). Each isolate and object keeps its own recent calls, as it keeps its own
 * recent errors.
 *
 * With `audit.otlp`, `flush` sends the queued spans now. The edge calls it under `waitUntil` once
 * each response is done: a stateless invocation ends with its response, and the exporter's own
 * batching timer, set in it, would end with it, losing the spans (objects keep their timers).
 *
 * @module
 */
import { auditFromConfig } from '../../../shared/audit/audit-from-config.ts';
import { RecentCalls } from '../../audit/recent-calls.ts';
import { WorkerAudit } from '../../audit/worker-audit.ts';
import type { WorkerConfig } from '../../config/worker-config.ts';
import type { WorkerLogger } from '../../log.ts';
import { workersAuditWrite } from './workers-console.ts';

export interface WorkersAudit {
  audit: WorkerAudit;
  /** Sends the spans queued so far to the collector; null without `audit.otlp`. */
  flush: (() => Promise<void>) | null;
}

export function workersAudit(config: WorkerConfig, log: WorkerLogger, level: string): WorkersAudit {
  const recentCalls = new RecentCalls();
  const configured = auditFromConfig(config.audit, {
    component: 'worker',
    write: workersAuditWrite(level),
    log,
    onRecord: (record) => recentCalls.record(record),
  });
  const exporter = configured.exporter;
  return { audit: new WorkerAudit({ config, log: configured.audit, recentCalls }), flush: exporter === null ? null : () => exporter.flush() };
}
