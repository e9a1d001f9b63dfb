/**
 * Deno's network for Client ID Metadata Documents: `Deno.resolveDns` gives every address of the
 * name for the check, and `Deno.connect` + `Deno.startTls` open the connection to a checked address
 * with the certificate checked against the name, so the name is never resolved a second time
 * (`connection-fetch.ts` says why).
 *
 * @module
 */
import { ConnectError, type ByteConnection } from '../../auth/oauth/clients/connection-fetch.ts';
import type { DocumentNetwork } from '../../auth/oauth/clients/metadata-document.ts';

interface DenoConn {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): void;
}

/** The slice of `Deno` this file uses. */
export interface DenoNetApi {
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
  let tcp: DenoConn;
  try {
    // The signal ends only a connect under way (a connection made stays open when it fires later).
    tcp = await deno.connect({ hostname: address.includes(':') ? `[${address}]` : address, port, signal });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    // By its kind only: Deno's message names this machine's own address.
    throw new ConnectError('connect', (error as Error).name);
  }
  let tls: DenoConn & { handshake(): Promise<unknown> };
  try {
    tls = await deno.startTls(tcp, { hostname: serverName });
  } catch (error) {
    tcp.close();
    throw new ConnectError('tls', firstLine(error));
  }
  // The handshake runs on first use otherwise; here a bad certificate is named as one.
  const abort = () => tls.close();
  signal.addEventListener('abort', abort, { once: true });
  try {
    await tls.handshake();
  } catch (error) {
    try {
      tls.close();
    } catch {
      // Closed by the abort already.
    }
    throw signal.aborted ? signal.reason : new ConnectError('tls', firstLine(error));
  } finally {
    signal.removeEventListener('abort', abort);
  }
  return tls;
}

function firstLine(error: unknown): string {
  return String((error as Error).message ?? error).split('\n')[0]!.slice(0, 160);
}
