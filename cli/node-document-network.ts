/**
 * Node's network for Client ID Metadata Documents (the worker under `--runtime node`): `dns.lookup`
 * gives every address of the name for the check, and `tls.connect` opens the connection to a
 * checked address with the certificate checked against the name, so the name is never resolved a
 * second time (`worker/auth/oauth/clients/connection-fetch.ts` says why).
 *
 * @module
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Duplex } from 'node:stream';
import { connect } from 'node:tls';
import { ConnectError, type ByteConnection, type ConnectTls } from '../worker/auth/oauth/clients/connection-fetch.ts';
import type { DocumentNetwork } from '../worker/auth/oauth/clients/metadata-document.ts';

/** Every address a name resolves to, for the metadata document fetch's address check. */
export async function nodeResolve(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
}

/** `ca`: roots trusted besides Node's own (a test's throwaway certificate). */
export function nodeDocumentNetwork(options: { ca?: string } = {}): DocumentNetwork {
  return { resolve: nodeResolve, connectTls: nodeConnectTls(options) };
}

export function nodeConnectTls(options: { ca?: string } = {}): ConnectTls {
  return ({ address, port, serverName, signal }) =>
    new Promise<ByteConnection>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      // SNI carries names only (RFC 6066 §3); an IP literal is checked against the certificate as the host.
      const socket = connect({ host: address, port, ...(isIP(serverName) === 0 ? { servername: serverName } : {}), ...(options.ca !== undefined ? { ca: options.ca } : {}) });
      let connected = false;
      const abort = () => socket.destroy();
      const closed = () => failed(new Error('closed'));
      const settle = () => {
        signal.removeEventListener('abort', abort);
        socket.off('error', failed);
        socket.off('close', closed);
      };
      function failed(error: Error & { code?: string }): void {
        settle();
        socket.destroy();
        // By its code only: Node's connect message names the address and port, and its TLS codes say what was wrong.
        reject(signal.aborted ? signal.reason : new ConnectError(connected ? 'tls' : 'connect', error.code ?? error.name));
      }
      signal.addEventListener('abort', abort, { once: true });
      socket.once('connect', () => (connected = true));
      socket.on('error', failed);
      socket.once('close', closed);
      socket.once('secureConnect', () => {
        settle();
        const { readable, writable } = Duplex.toWeb(socket);
        resolve({ readable: readable as ReadableStream<Uint8Array>, writable: writable as WritableStream<Uint8Array>, close: () => socket.destroy() });
      });
    });
}
