/**
 * The era cache key of a host's HTTP server (`shared/era-bridge/discover-verdict.ts`): its name
 * and a fingerprint of its URL and headers, as a stdio server's is of its launch (`server-era.ts`),
 * so a changed entry is asked again, and no header value is kept in the key.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { HttpServerConfig } from '../server-config.ts';

export function httpServerEraKey(name: string, config: Pick<HttpServerConfig, 'url' | 'headers'>): string {
  const headers = Object.entries(config.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const fingerprint = createHash('sha256').update(JSON.stringify([config.url, headers])).digest('hex').slice(0, 32);
  return `${name}#http#${fingerprint}`;
}
