/**
 * The transport of a modern agent's instance on a host's HTTP target (a server this workstation
 * reaches over Streamable HTTP), so the same instance code serves stdio and HTTP servers
 * (`server-instance.ts`): the era probe and a modern server's requests go as modern POSTs
 * (`shared/modern-http-transport.ts`); the host's `initialize`, sent when the probe said legacy,
 * switches it to the SDK's session-based Streamable HTTP client for good, whose `close` ends the
 * server's session with a DELETE (`HttpUpstreamTransport`).
 *
 * The era verdict of an HTTP server is cached under its name and a fingerprint of its URL and
 * headers, as a stdio server's is under its launch (`server-era.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { HttpUpstreamTransport } from '../../../shared/http-upstream-transport.ts';
import { ModernHttpClientTransport } from '../../../shared/modern-http-transport.ts';
import type { HttpServerConfig } from '../server-config.ts';

/** The era cache key of an HTTP server config: its name and where and how it is reached. */
export function httpServerEraKey(name: string, config: Pick<HttpServerConfig, 'url' | 'headers'>): string {
  const headers = Object.entries(config.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const fingerprint = createHash('sha256').update(JSON.stringify([config.url, headers])).digest('hex').slice(0, 32);
  return `${name}#http#${fingerprint}`;
}

/** The SDK's session-based client to `config`, fit to be bridged raw. */
export function legacyHttpTransport(config: Pick<HttpServerConfig, 'url' | 'headers'>): HttpUpstreamTransport {
  const inner = new StreamableHTTPClientTransport(new URL(config.url), Object.keys(config.headers).length > 0 ? { requestInit: { headers: config.headers } } : {});
  return new HttpUpstreamTransport(inner);
}

export class DualEraHttpTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #config: Pick<HttpServerConfig, 'url' | 'headers'>;
  readonly #modern: ModernHttpClientTransport;
  #legacy: Transport | null = null;
  #closed = false;

  constructor(config: Pick<HttpServerConfig, 'url' | 'headers'>) {
    this.#config = config;
    this.#modern = new ModernHttpClientTransport({ url: new URL(config.url), headers: config.headers });
    this.#modern.onmessage = (message) => this.onmessage?.(message);
    this.#modern.onerror = (error) => this.onerror?.(error);
    this.#modern.onclose = () => this.#legacy === null && this.#ended();
  }

  /** Which protocol the transport speaks now. */
  get era(): 'modern' | 'legacy' {
    return this.#legacy === null ? 'modern' : 'legacy';
  }

  start(): Promise<void> {
    return this.#modern.start();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#legacy === null && 'method' in message && message.method === 'initialize') await this.#switchToLegacy();
    await (this.#legacy ?? this.#modern).send(message);
  }

  async close(): Promise<void> {
    await Promise.all([this.#modern.close(), this.#legacy?.close()]);
    this.#ended();
  }

  async #switchToLegacy(): Promise<void> {
    const legacy = legacyHttpTransport(this.#config);
    legacy.onmessage = (message) => this.onmessage?.(message);
    legacy.onerror = (error) => this.onerror?.(error);
    legacy.onclose = () => this.#ended();
    this.#legacy = legacy;
    await this.#modern.close();
    await legacy.start();
  }

  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
