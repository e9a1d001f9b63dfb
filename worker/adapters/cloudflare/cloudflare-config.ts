/**
 * What Cloudflare Workers refuse in a worker config that every other edge runtime takes, in one
 * pure function that the bundle (`cloudflare-env.ts`) and `switchyard check --runtime cloudflare`
 * both call, so check passes exactly what the deployed worker accepts.
 *
 * The secret's size is check's alone: Cloudflare refuses a larger one at `wrangler secret put`, so
 * a config the worker reads has always fit.
 *
 * @module
 */
import { parseWorkerConfigText, type WorkerConfig } from '../../config/worker-config.ts';
import { ValidationError, type ValidationIssue } from '../../../shared/validation.ts';

/**
 * Cloudflare's limit on one environment variable or secret: "5 KB" on its Workers limits page,
 * read as 5 × 1024 bytes. wrangler 4.86 states no limit of its own (the API enforces it).
 */
export const SECRET_MAX_BYTES = 5 * 1024;

/** The refusals of a config (parsed, or as its JSON reads when it is not yet valid for the edge), as `path: message` problems. */
export function cloudflareConfigIssues(config: unknown): ValidationIssue[] {
  const audit = (config as { audit?: unknown } | null)?.audit;
  if (typeof audit !== 'object' || audit === null || (audit as { file?: unknown }).file === undefined) return [];
  return [{ path: 'audit.file', message: 'Workers have no file system: audit lines go to the worker\'s log (wrangler tail, Workers Logs); remove audit.file' }];
}

/**
 * What a config asks that Workers take but cannot do, as `path: message` warnings for check:
 * `link-on-loopback` needs the peer address and the listening port of a socket the worker serves
 * itself, which a Worker never learns; and a config with no `public-url` that allows only
 * loopback Host names refuses every request a deployed worker gets (its Host is the workers.dev
 * or custom domain), which only wrangler dev would not show (review s22).
 */
export function cloudflareConfigWarnings(config: WorkerConfig): ValidationIssue[] {
  const warnings: ValidationIssue[] = [];
  if (config['link-on-loopback'] === true) {
    warnings.push({
      path: 'link-on-loopback',
      message: 'does nothing on Workers: a sidecar links at "public-url" only; under wrangler dev, set "public-url" to the local URL the sidecar dials (e.g. http://127.0.0.1:8787) in the config it runs with',
    });
  }
  if (config['public-url'] === undefined && config['allowed-hosts'].every((host) => LOOPBACK_HOST.test(host))) {
    warnings.push({
      path: 'public-url',
      message: 'is not set, and "allowed-hosts" names only loopback: a deployed worker refuses every request (403, its Host is your workers.dev or custom domain); set "public-url" to the URL agents use (e.g. "https://switchyard.<account>.workers.dev")',
    });
  }
  return warnings;
}

const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

/** Parses a worker config as the Workers bundle does; throws `ValidationError` listing every problem. */
export function parseCloudflareConfigText(text: string): WorkerConfig {
  let config: WorkerConfig;
  try {
    config = parseWorkerConfigText(text, { runtime: 'edge' });
  } catch (error) {
    // Every problem at once: Workers' own were said only after the edge's were fixed (review s22).
    if (!(error instanceof ValidationError)) throw error;
    const more = cloudflareConfigIssues(jsonOrUndefined(text));
    if (more.length === 0) throw error;
    throw new ValidationError('worker config', [...error.issues, ...more]);
  }
  const issues = cloudflareConfigIssues(config);
  if (issues.length > 0) throw new ValidationError('worker config', issues);
  return config;
}

/** The size problem of config text (valid JSON) stored as a secret, measured as it should be sent: minified. */
export function secretSizeIssues(text: string): ValidationIssue[] {
  const bytes = new TextEncoder().encode(JSON.stringify(JSON.parse(text))).length;
  if (bytes <= SECRET_MAX_BYTES) return [];
  return [{
    path: '(root)',
    message: `${bytes.toLocaleString('en-US')} bytes as minified JSON, more than a Workers secret holds (${SECRET_MAX_BYTES.toLocaleString('en-US')} bytes): remove agents, hosts or servers, or shorten their names`,
  }];
}

function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
