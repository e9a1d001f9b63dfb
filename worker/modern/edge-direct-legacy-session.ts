/**
 * A legacy agent's session on an edge-direct HTTP server (`executor-target-router.ts`): the
 * session passed through, as ever, unless the server refuses its `initialize`. Then the worker
 * asks the server `server/discover` the modern way, and a server that answers it as a
 * modern-only (2026-07-28) one is said to be one, with what to do: the worker keeps nothing
 * between requests to bridge a session onto such a server, as a host does for a server bound to
 * it. Before, the agent read only that the server "could not be reached", with the server's
 * refusal of a method it no longer has.
 *
 * @module
 */
import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { HttpUpstreamTransport } from '../../shared/http-upstream-transport.ts';
import { LegacyHttpClientTransport } from '../../shared/legacy-http-client-transport.ts';
import { MODERN_VERSION, postModern, type ModernHttpTarget } from '../../shared/modern-http-transport.ts';
import { WireError } from '../../shared/errors.ts';
import { isRecord } from '../../shared/records.ts';

/** How long the worker waits for the discover that explains a refusal: the agent waits on it. */
const DISCOVER_TIMEOUT_MS = 5_000;

export class EdgeDirectLegacySession extends HttpUpstreamTransport {
  readonly #target: ModernHttpTarget;
  readonly #server: string;

  constructor(target: ModernHttpTarget, server: string) {
    super(new LegacyHttpClientTransport(target));
    this.#target = target;
    this.#server = server;
  }

  override async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      await super.send(message, options);
    } catch (error) {
      if (!('method' in message) || message.method !== 'initialize' || error instanceof WireError) throw error;
      const versions = await modernOnlyVersions(this.#target);
      if (versions === null) throw error;
      throw new WireError(
        'launch-failed',
        `Server "${this.#server}" speaks only MCP ${versions.join(', ')}, and refused this session's initialize: the worker bridges no session to an edge-direct server of that era; connect with a ${MODERN_VERSION} client, or bind the server to a host (its URL in the host's mcp.json), which bridges it`,
        { detail: { server: this.#server } },
      );
    }
  }
}

/** The versions a server answers `server/discover` with, when it does as a modern server; null when it does not. */
async function modernOnlyVersions(target: ModernHttpTarget): Promise<string[] | null> {
  const discover = { jsonrpc: '2.0', id: 'switchyard-discover', method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } } } as JSONRPCMessage;
  let versions: string[] | null = null;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), DISCOVER_TIMEOUT_MS);
  try {
    const outcome = await postModern(target, discover, (answer) => {
      const result = 'result' in answer && isRecord(answer.result) ? answer.result : undefined;
      const supported = result?.supportedVersions;
      if (Array.isArray(supported) && supported.length > 0 && supported.every((v) => typeof v === 'string')) versions = supported.slice(0, 8).map((v) => String(v).slice(0, 32));
    }, abort.signal);
    return outcome.modern ? versions : null;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
