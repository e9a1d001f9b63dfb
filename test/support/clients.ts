/**
 * SDK clients over Streamable HTTP, as agents connect to a worker: a bearer token, optional
 * capabilities and headers; `closeClient` ends the session (DELETE) before closing.
 *
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

export async function connectClient(url: string, token: string, capabilities: ClientCapabilities = {}, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
  });
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' }, { capabilities });
  await client.connect(transport);
  return client;
}

/** Ends the agent session (DELETE) and closes the client. */
export async function closeClient(client: Client): Promise<void> {
  await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
  await client.close();
}
