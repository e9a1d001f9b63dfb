/**
 * The fields of a worker's first log line, `Worker listening`, whichever runtime serves it: what
 * it runs, for whoever reads its log (a config that is not the one meant shows here first), and
 * where the built-in OAuth server's keys come from (an unset `SWITCHYARD_OAUTH_KEYS` falls back
 * to the state's own key, and says so here).
 *
 * @module
 */
import type { WorkerConfig } from './config/worker-config.ts';

export interface ListeningPlace {
  readonly url: string;
  /** The config file, or the variable that held it inline. */
  readonly config: string;
  readonly stateDir: string | null;
  /** Whether `SWITCHYARD_OAUTH_KEYS` gives the built-in server's keys. */
  readonly oauthKeysGiven: boolean;
}

export function listeningFields(config: WorkerConfig, place: ListeningPlace): Record<string, unknown> {
  const builtIn = config.oauth?.['built-in'] !== undefined;
  return {
    url: place.url,
    config: place.config,
    agents: config.agents.length,
    hosts: config.hosts.map((h) => h['entity-id']),
    servers: Object.keys(config.servers).length,
    oauth: builtIn ? 'built-in' : config.oauth?.['external-issuer'] !== undefined ? 'external-issuer' : null,
    stateDir: place.stateDir,
    oauthKeys: !builtIn ? null : place.oauthKeysGiven ? 'SWITCHYARD_OAUTH_KEYS' : 'state',
  };
}
