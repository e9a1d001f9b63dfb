/**
 * Builds one side's audit log from its `"audit"` config section: the runtime supplies where lines
 * go (stderr, or the configured file, which only a runtime adapter can open), this adds the
 * argument switch and the OTLP exporter when a collector is configured.
 *
 * @module
 */
import type { Logger } from '../log.ts';
import type { AuditConfig } from './audit-config.ts';
import { AuditLog, type AuditLogOptions } from './audit-log.ts';
import { OtlpTraceExporter } from './otlp-exporter.ts';

export interface AuditFromConfigOptions extends Pick<AuditLogOptions, 'write' | 'fields' | 'onRecord'> {
  component: 'worker' | 'sidecar';
  /** For the exporter's warnings and lines that cannot be written. */
  log: Logger;
  fetch?: typeof fetch;
}

export interface ConfiguredAudit {
  audit: AuditLog;
  /** Present when `audit.otlp` names a collector; flush it on shutdown. */
  exporter: OtlpTraceExporter | null;
}

export function auditFromConfig(config: AuditConfig | undefined, options: AuditFromConfigOptions): ConfiguredAudit {
  const otlp = config?.otlp;
  const exporter = otlp === undefined
    ? null
    : new OtlpTraceExporter({
        endpoint: otlp.endpoint,
        ...(otlp.headers !== undefined ? { headers: otlp.headers } : {}),
        serviceName: `switchyard-${options.component}`,
        log: options.log,
        ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
      });
  const audit = new AuditLog({
    component: options.component,
    write: options.write,
    includeArguments: config?.['include-arguments'] === true,
    ...(options.fields !== undefined ? { fields: options.fields } : {}),
    ...(options.onRecord !== undefined ? { onRecord: options.onRecord } : {}),
    ...(exporter !== null ? { spans: exporter } : {}),
    log: options.log,
  });
  return { audit, exporter };
}
