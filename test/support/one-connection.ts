/**
 * An agent's HTTP/1.1 client held to one keep-alive connection (node:http, an agent of one
 * socket), which says of each answer whether it came on the connection of the one before: what
 * every pooled client (undici's fetch, the SDK's transport) does by itself, made visible. A server
 * that closes the connection after an answer shows as the next request not on a reused socket
 * (or failing outright, when it was sent before the close arrived).
 *
 * @module
 */
import { Agent, request as httpRequest } from 'node:http';

export interface ConnectionAnswer {
  status: number;
  body: string;
  /** True when this request went out on the socket of an earlier one. */
  reusedSocket: boolean;
}

export interface OneConnection {
  send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<ConnectionAnswer>;
  close(): void;
}

export function oneConnection(origin: string): OneConnection {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return {
    send: (method, path, headers, body) =>
      new Promise((resolve, reject) => {
        const request = httpRequest(new URL(path, origin), { method, headers, agent }, (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text, reusedSocket: request.reusedSocket }));
          response.on('error', reject);
        });
        request.on('error', reject);
        request.end(body);
      }),
    close: () => agent.destroy(),
  };
}
