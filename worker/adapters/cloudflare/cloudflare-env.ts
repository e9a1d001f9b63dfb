/**
 * The worker config and logger on Workers, read from the bindings of each isolate: the edge
 * worker and both Durable Object classes take the same `SWITCHYARD_WORKER_CONFIG` (a secret, or a
 * var), validated by the same `parseWorkerConfigText` as every other runtime, with the refusals
 * of `cloudflare-config.ts`, once per isolate and config text; its lines go through the console
 * method of their level (`workers-console.ts`); `audit()` builds the audit log of one app
 * (`workers-audit.ts`). An invalid config is logged as one `path: message` line per problem and
 * every request answers 500 until it is fixed: the body says only where to look, since anyone may
 * read it.
 *
 * @module
 */
import type { WorkerConfig } from '../../config/worker-config.ts';
import { parseLogLevel, type WorkerLogger } from '../../log.ts';
import { parseCloudflareConfigText } from './cloudflare-config.ts';
import { workersLogger } from './workers-console.ts';
import { ValidationError } from '../../../shared/validation.ts';
import { describeFileProblems } from '../../../shared/file-problems-report.ts';
import { workersAudit, type WorkersAudit } from './workers-audit.ts';
import type { OAuthRuntime } from '../../app.ts';
import { DurableObjectOAuthStore } from './oauth-state-object.ts';
import { parseServerKeys, SERVER_KEYS_ENV } from '../../auth/oauth/server-key.ts';
import { LocalError } from '../../../shared/errors.ts';
import type { SwitchyardEnv } from './workers-runtime.ts';

export type Loaded = { ok: true; config: WorkerConfig; log: WorkerLogger; audit: () => WorkersAudit } | { ok: false; response: () => Response };

/** What an app's `oauth` option gets on Workers: the state in the `OAuthState` object (built-in server only). */
export function workersOAuth(env: SwitchyardEnv, config: WorkerConfig): { oauth?: OAuthRuntime } {
  if (config.oauth === undefined) return {};
  // No DNS resolver on Workers: metadata documents are fetched with the runtime's fetch alone.
  if (config.oauth['built-in'] === undefined) return { oauth: {} };
  // Checked when the config was loaded (`loadFromEnv` refuses a malformed one), so this does not throw.
  const keys = parseServerKeys(env[SERVER_KEYS_ENV]);
  return { oauth: { store: new DurableObjectOAuthStore(env.OAUTH_STATE), ...(keys !== undefined ? { keys } : {}) } };
}

let cached: { text: string | undefined; level: string | undefined; keys: string | undefined; loaded: Loaded } | undefined;

/** The parsed config and a logger for `component`, or the 500 answer for an unusable config (or OAuth keys). */
export function loadFromEnv(env: SwitchyardEnv, component: string): Loaded {
  const text = env.SWITCHYARD_WORKER_CONFIG;
  const level = env.SWITCHYARD_LOG_LEVEL;
  const keys = env[SERVER_KEYS_ENV];
  if (cached === undefined || cached.text !== text || cached.level !== level || cached.keys !== keys) cached = { text, level, keys, loaded: parse(text, level, keys) };
  const loaded = cached.loaded;
  return loaded.ok ? { ...loaded, log: loaded.log.child({ component }) } : loaded;
}

/**
 * `wrangler secret put` sets nothing for `wrangler dev`, which reads `.dev.vars` instead, and only
 * when it starts: a user trying the worker locally first must be told so.
 */
export const NO_CONFIG = 'No worker config: set SWITCHYARD_WORKER_CONFIG, deployed with wrangler secret put SWITCHYARD_WORKER_CONFIG given worker.json minified (a secret holds 5 KB; the README has the command), ' +
  'or under wrangler dev in a .dev.vars file next to wrangler.jsonc holding the line SWITCHYARD_WORKER_CONFIG=\'<worker.json as one line of JSON>\' (then restart wrangler dev)';

function parse(text: string | undefined, level: string | undefined, keys: string | undefined): Loaded {
  const refuse = (problem: string): Loaded => {
    console.error(problem);
    const body = { error: { message: 'The worker config is missing or invalid: see the worker log (wrangler tail)' } };
    return { ok: false, response: () => Response.json(body, { status: 500 }) };
  };
  if (text === undefined || text === '') return refuse(NO_CONFIG);
  try {
    const config = parseCloudflareConfigText(text);
    if (config.oauth?.['built-in'] !== undefined) parseServerKeys(keys);
    const log = workersLogger(parseLogLevel(level));
    return { ok: true, config, log, audit: () => workersAudit(config, log, parseLogLevel(level)) };
  } catch (error) {
    if (error instanceof ValidationError) return refuse(describeFileProblems('SWITCHYARD_WORKER_CONFIG', 'worker config', error.issues));
    if (error instanceof LocalError && error.code === 'invalid-config') return refuse(error.message);
    return refuse(`Cannot read the worker config SWITCHYARD_WORKER_CONFIG: ${error instanceof Error ? error.message : String(error)}`);
  }
}
