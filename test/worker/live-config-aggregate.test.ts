/**
 * A live worker config change under a `/mcp` session, as a user walking the README meets it: the
 * worker under Deno watching its config file, the sidecar CLI with real stdio servers, and the MCP
 * SDK's own client, which does not initialize again after a 404. A server taken from the agent's
 * `servers` leaves that session's lists (its process ends, the agent is sent list_changed) while
 * the same client keeps working with the others; a server given back appears on the same session.
 * A change to who the agent is still ends the session (`live-config.test.ts`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { livePids } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;
const open: Client[] = [];

beforeAll(async () => {
  stack = await startStack({ servers: { files: fixtureServer('raw-echo-server.mjs'), pid: fixtureServer('pid-server.mjs') } });
}, 90_000);

afterAll(async () => {
  for (const client of open) await closeClient(client).catch(() => {});
  await stack?.stop();
});

async function connect(path: string): Promise<Client> {
  const client = await connectClient(`${stack.url}${path}`, stack.tokens.alice!);
  open.push(client);
  return client;
}

/** Resolves at the client's next tools/list_changed. */
function toolsChanged(client: Client): Promise<void> {
  return new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve()));
}

/** Gives alice `servers` in the worker's config file, and resolves once the worker says it reloaded (the `count`th time). */
async function setAliceServers(servers: string[], count: number): Promise<Record<string, unknown>> {
  const file = stack.worker.configFile;
  const config = JSON.parse(readFileSync(file, 'utf8')) as { agents: Array<{ name: string; servers: string[] }> };
  config.agents.find((a) => a.name === 'alice')!.servers = servers;
  writeFileSync(file, JSON.stringify(config));
  await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(count);
  return (stack.worker.err.filter(msg('Worker config reloaded')).at(-1) as { json: Record<string, unknown> }).json;
}

const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);
const pidOf = async (client: Client, name: string): Promise<number> => Number(((await client.callTool({ name })) as { content: Array<{ text: string }> }).content[0]!.text);
const echo = (client: Client, name: string) => client.callTool({ name, arguments: { message: 'still here' } });

describe('live worker config under a /mcp session', () => {
  it('takes a server from the agent\'s session and gives it back, the same SDK client working throughout', async () => {
    const client = await connect('/mcp');
    const filesOnly = await connect('/servers/files/mcp');
    expect(await names(client)).toEqual(expect.arrayContaining(['files__echo', 'pid__pid', 'offline__unavailable']));
    const pid = await pidOf(client, 'pid__pid');

    let changed = toolsChanged(client);
    expect(await setAliceServers(['files', 'offline'], 1)).toMatchObject({ endedSessions: 0 });
    await changed;
    const after = await names(client);
    expect(after).toEqual(expect.arrayContaining(['files__echo', 'offline__unavailable']));
    expect(after.filter((n) => n.startsWith('pid__'))).toEqual([]);
    expect(await echo(client, 'files__echo')).toEqual({ content: [{ type: 'text', text: 'Echo: still here' }] });
    const refused = (await client.callTool({ name: 'pid__pid' }).catch((e: unknown) => e)) as McpError;
    expect(refused).toBeInstanceOf(McpError);
    expect(refused.code).toBe(-32602);
    expect(refused.data).toEqual({ reason: 'server-not-found' });
    // Its channel closed, so its host ended the process.
    await expect.poll(() => livePids([pid]), { timeout: 15_000 }).toEqual([]);
    expect(await echo(filesOnly, 'echo')).toEqual({ content: [{ type: 'text', text: 'Echo: still here' }] });

    changed = toolsChanged(client);
    expect(await setAliceServers(['files', 'offline', 'pid'], 2)).toMatchObject({ endedSessions: 0 });
    await changed;
    expect(await names(client)).toEqual(expect.arrayContaining(['files__echo', 'pid__pid', 'offline__unavailable']));
    const again = await pidOf(client, 'pid__pid');
    expect(again).toBeGreaterThan(0);
    expect(again).not.toBe(pid);
    expect(await echo(client, 'files__echo')).toEqual({ content: [{ type: 'text', text: 'Echo: still here' }] });
    expect(stack.worker.err.filter(msg('Agent session ended by a config change'))).toEqual([]);
  });
});
