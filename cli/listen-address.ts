/**
 * Where `switchyard worker` and `switchyard start` listen: `--host` / `--port`, else the `HOST` /
 * `PORT` environment variables, else 127.0.0.1:8787. An empty variable counts as unset (an empty
 * flag is refused): Node binds `listen(port, '')` to every address, and a `HOST=$UNSET_VARIABLE`
 * must not open the worker to the network. A port is digits only: `Number('')` is 0 (a random
 * port) and `Number('0x50')` is 80.
 *
 * @module
 */
import { LocalError } from '../shared/errors.ts';

export interface ListenAddress {
  host: string;
  /** Where `host` came from, for a message about it: `(from HOST)` or nothing. */
  hostSource: string;
  port: number;
}

export function listenAddress(values: { host?: string | undefined; port?: string | undefined }, env: NodeJS.ProcessEnv = process.env): ListenAddress {
  if (values.host === '') throw new LocalError('usage', 'Invalid host "": expected an address to listen on, such as 127.0.0.1 (the default)');
  const host = values.host ?? (env.HOST || undefined) ?? '127.0.0.1';
  const hostSource = values.host === undefined && env.HOST ? ' (from HOST)' : '';
  const portText = values.port ?? (env.PORT || undefined) ?? '8787';
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new LocalError('usage', `Invalid port "${portText}"${values.port === undefined ? ' (from PORT)' : ''}: expected 0-65535`);
  return { host, hostSource, port };
}

/** `host` as a URL's host name: an IPv6 address in brackets (`HOST=::1` is `[::1]`). */
export function hostName(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
