/**
 * The egress proxy a Deno worker's own `fetch` would take (`HTTPS_PROXY`, `NO_PROXY`), for the
 * Client ID Metadata Document fetch, which connects itself (`deno-document-network.ts`): through
 * the proxy, it asks `CONNECT` to the address it checked, not to the name, so the proxy's own DNS
 * cannot be rebound either. Pure functions; the connection is the caller's.
 *
 * @module
 */
import { latin1 } from '../../auth/oauth/clients/connection-fetch.ts';

export interface EgressProxy {
  hostname: string;
  port: number;
  /** `Proxy-Authorization` from the proxy URL's user and password; never logged nor said. */
  authorization?: string;
}

/** What the proxy variables say, or why they cannot be followed. */
export type ProxyChoice = { proxy: EgressProxy } | { direct: true } | { refused: string };

/**
 * Whether a connection to `host` goes through a proxy: `HTTPS_PROXY` (or `https_proxy`), unless
 * `NO_PROXY` (or `no_proxy`) names the host, a domain above it, or `*`.
 */
export function proxyFor(host: string, env: (name: string) => string | undefined): ProxyChoice {
  const setting = env('HTTPS_PROXY') || env('https_proxy');
  if (!setting) return { direct: true };
  if (bypassed(host, env('NO_PROXY') || env('no_proxy') || '')) return { direct: true };
  let url: URL;
  try {
    url = new URL(setting.includes('://') ? setting : `http://${setting}`);
  } catch {
    return { refused: 'HTTPS_PROXY is not a URL' };
  }
  // A TLS connection inside a TLS connection to the proxy is more than this client does.
  if (url.protocol !== 'http:') return { refused: `HTTPS_PROXY uses ${url.protocol.slice(0, 10)}, and only an http: proxy is supported here` };
  const credentials = url.username === '' && url.password === '' ? undefined : `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return {
    proxy: {
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? 80 : Number(url.port),
      ...(credentials !== undefined ? { authorization: `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode(credentials)))}` } : {}),
    },
  };
}

function bypassed(host: string, noProxy: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return noProxy
    .split(/[\s,]+/)
    .map((entry) => entry.trim().toLowerCase().replace(/^\*?\./, '').replace(/:\d+$/, '').replace(/^\[|\]$/g, ''))
    .some((entry) => entry === '*' || (entry !== '' && (name === entry || name.endsWith(`.${entry}`))));
}

/** The CONNECT request for `address`:`port` (an IP literal, the one checked). */
export function connectRequest(address: string, port: number, proxy: EgressProxy): string {
  const target = `${address.includes(':') ? `[${address}]` : address}:${port}`;
  return `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxy.authorization !== undefined ? `Proxy-Authorization: ${proxy.authorization}\r\n` : ''}\r\n`;
}

/** The status of the proxy's answer to CONNECT, once `bytes` hold its whole head; null while they do not. Throws when they are not one. */
export function connectAnswer(bytes: Uint8Array): number | null {
  const text = latin1(bytes);
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  // The tunnel's first bytes are the TLS handshake's: anything after the head came from the proxy, not the server.
  if (end + 4 !== text.length) throw new Error('the proxy sent more than its answer to CONNECT');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (status === null) throw new Error('the proxy did not answer CONNECT in HTTP/1.1');
  return Number(status[1]);
}
