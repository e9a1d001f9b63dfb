/**
 * Deno's network for Client ID Metadata Documents: `Deno.resolveDns` gives every address of the
 * name for the check, and `Deno.connect` + `Deno.startTls` open the connection to a checked address
 * with the certificate checked against the name, so the name is never resolved a second time
 * (`connection-fetch.ts` says why). Where Deno's `fetch` would take an egress proxy
 * (`HTTPS_PROXY`), so does this, with a `CONNECT` to the checked address (`egress-proxy.ts`).
 *
 * @module
 */
import { ConnectError, type ByteConnection } from '../../auth/oauth/clients/connection-fetch.ts';
import type { DocumentNetwork } from '../../auth/oauth/clients/metadata-document.ts';
import { connectAnswer, connectRequest, proxyFor, type EgressProxy } from './egress-proxy.ts';

interface DenoConn {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  read(buffer: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  close(): void;
}

/** The slice of `Deno` this file uses. */
export interface DenoNetApi {
  env: { get(key: string): string | undefined };
  resolveDns(query: string, type: 'A' | 'AAAA'): Promise<string[]>;
  connect(options: { hostname: string; port: number; signal?: AbortSignal }): Promise<DenoConn>;
  startTls(conn: DenoConn, options: { hostname: string }): Promise<DenoConn & { handshake(): Promise<unknown> }>;
}

export function denoDocumentNetwork(deno: DenoNetApi): DocumentNetwork {
  return { resolve: denoResolver(deno), connectTls: (options) => denoConnectTls(deno, options) };
}

/** Every A and AAAA address of a name (an IP literal resolves to itself). */
export function denoResolver(deno: Pick<DenoNetApi, 'resolveDns'>): (hostname: string) => Promise<string[]> {
  return async (hostname) => {
    if (/^[\d.]+$/.test(hostname) || hostname.includes(':')) return [hostname];
    const settled = await Promise.allSettled([deno.resolveDns(hostname, 'A'), deno.resolveDns(hostname, 'AAAA')]);
    const addresses = settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    if (addresses.length === 0 && settled[0].status === 'rejected') throw settled[0].reason as Error;
    return addresses;
  };
}

async function denoConnectTls(deno: DenoNetApi, { address, port, serverName, signal }: { address: string; port: number; serverName: string; signal: AbortSignal }): Promise<ByteConnection> {
  // A variable Deno may not read is one this run does not have: at a sign-in, not a reason to fail it.
  const choice = proxyFor(serverName, (name) => {
    try {
      return deno.env.get(name);
    } catch {
      return undefined;
    }
  });
  if ('refused' in choice) throw new ConnectError('connect', choice.refused);
  const proxy = 'proxy' in choice ? choice.proxy : null;
  const to = proxy === null ? { hostname: address, port } : proxy;
  let tcp: DenoConn;
  try {
    // The signal ends only a connect under way (a connection made stays open when it fires later).
    tcp = await deno.connect({ hostname: to.hostname.includes(':') ? `[${to.hostname}]` : to.hostname, port: to.port, signal });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    // By its kind only: Deno's message names this machine's own address.
    throw new ConnectError('connect', `${proxy === null ? '' : 'to the proxy: '}${(error as Error).name}`);
  }
  if (proxy !== null) await tunnel(tcp, address, port, proxy, signal);
  let tls: DenoConn & { handshake(): Promise<unknown> };
  try {
    tls = await deno.startTls(tcp, { hostname: serverName });
  } catch (error) {
    tcp.close();
    throw new ConnectError('tls', firstLine(error));
  }
  // The handshake runs on first use otherwise; here a bad certificate is named as one.
  await closedOnFailure(tls, signal, 'tls', () => tls.handshake());
  return tls;
}

/** Asks the proxy for a tunnel to `address`:`port` on `tcp`; closes `tcp` and throws when it says no. */
function tunnel(tcp: DenoConn, address: string, port: number, proxy: EgressProxy, signal: AbortSignal): Promise<void> {
  return closedOnFailure(tcp, signal, 'connect', async () => {
    await tcp.write(new TextEncoder().encode(connectRequest(address, port, proxy)));
    let answer = new Uint8Array(0);
    const chunk = new Uint8Array(1024);
    for (;;) {
      // read(), not the readable stream: a reader left on it would keep startTls from taking the connection.
      const read = await tcp.read(chunk);
      if (read === null) throw new Error('the proxy closed the connection');
      answer = new Uint8Array([...answer, ...chunk.subarray(0, read)]);
      if (answer.byteLength > 8 * 1024) throw new Error('the proxy\'s answer to CONNECT is longer than 8192 bytes');
      const status = connectAnswer(answer);
      if (status === null) continue;
      if (status !== 200) throw new Error(`the proxy answered ${status} to CONNECT`);
      return;
    }
  });
}

/**
 * `work` on `conn`, which `signal` closes; when it fails, `conn` is closed and the failure named
 * for `stage` (or the signal's reason, when the signal ended it).
 */
async function closedOnFailure<T>(conn: DenoConn, signal: AbortSignal, stage: 'connect' | 'tls', work: () => Promise<T>): Promise<T> {
  const abort = () => conn.close();
  signal.addEventListener('abort', abort, { once: true });
  try {
    return await work();
  } catch (error) {
    try {
      conn.close();
    } catch {
      // Closed by the abort already.
    }
    throw signal.aborted ? signal.reason : new ConnectError(stage, firstLine(error));
  } finally {
    signal.removeEventListener('abort', abort);
  }
}

function firstLine(error: unknown): string {
  return String((error as Error).message ?? error).split('\n')[0]!.slice(0, 160);
}
