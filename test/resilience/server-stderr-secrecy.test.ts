/**
 * A server's stderr stays on its host (DESIGN §4/§5), on the real stack (worker under Deno, sidecar
 * CLI, one link): a server that prints a secret from its environment and exits, mid-call or before
 * it answers `initialize`, gives the agent, `/mcp`'s instructions, `/healthz` (admin and agent) and
 * the worker's own output a fixed "see the sidecar log" message, while the sidecar's log keeps the
 * stderr, with the server's name and exit code, for the host's owner.
 *
 * The stack logs at `info`, so the sidecar's debug line per stderr line is not what the last check
 * finds: the exit's own warn line is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { randomCredential } from '../support/configs.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

const SECRET = randomCredential('env-secret');
const leaky = (...args: string[]) => ({ ...fixtureServer('env-leak-server.mjs', ...args), env: { LEAK_SECRET: SECRET } });
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { leaky: leaky(), 'leaky-start': leaky('--at-start') },
    agents: [{ name: 'bob', servers: ['leaky-start'] }],
  });
});

afterAll(async () => {
  await stack?.stop();
});

const reasonOf = (error: unknown) => ((error as McpError).data as { reason?: unknown } | undefined)?.reason;

async function healthzText(token: string): Promise<string> {
  const response = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return response.text();
}

/** The sidecar's warn line for `server`'s exit, which must hold the stderr the agent never sees. */
async function sidecarExitLine(server: string): Promise<Record<string, unknown>> {
  return stack.sidecar.waitForLine((line) => line.msg === 'Server exited' && line.server === server, `the exit of "${server}"`, 10_000);
}

describe('a server that prints an environment value to stderr and exits', { timeout: 60_000 }, () => {
  it('mid-call: the agent and /healthz get a fixed message, the sidecar log gets the stderr', async () => {
    const client = await connectClient(`${stack.url}/servers/leaky/mcp`, stack.tokens.alice!);
    const error = await client.callTool({ name: 'crash', arguments: {} }).catch((e: unknown) => e);
    await closeClient(client);
    expect(error).toBeInstanceOf(McpError);
    expect(reasonOf(error)).toBe('server-exited');
    expect((error as Error).message).toContain('Server "leaky" exited with code 1: see the sidecar log');
    expect((error as Error).message).not.toContain(SECRET);

    // The worker records the failure for /healthz, so the fixed text shows there once it arrived.
    await expect.poll(() => healthzText(stack.tokens.admin!), { timeout: 10_000 }).toContain('exited with code 1: see the sidecar log');
    expect(await healthzText(stack.tokens.admin!)).not.toContain(SECRET);
    expect(await healthzText(stack.tokens.alice!)).not.toContain(SECRET);

    expect(await sidecarExitLine('leaky')).toMatchObject({ level: 'warn', exitCode: 1, signal: null, stderr: expect.stringContaining(`DB_PASSWORD=${SECRET}`) });
  });

  it('before answering initialize: the agent, /mcp and /healthz get a fixed message, the sidecar log gets the stderr', async () => {
    const error = await connectClient(`${stack.url}/servers/leaky-start/mcp`, stack.tokens.alice!).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toContain('see the sidecar log');
    expect(String(error)).not.toContain(SECRET);

    // /mcp names a server that failed to start, and why, in its instructions.
    const aggregate = await connectClient(`${stack.url}/mcp`, stack.tokens.bob!);
    const instructions = aggregate.getInstructions() ?? '';
    await closeClient(aggregate);
    expect(instructions).toContain('leaky-start');
    expect(instructions).not.toContain(SECRET);

    expect(await healthzText(stack.tokens.admin!)).not.toContain(SECRET);
    expect(await healthzText(stack.tokens.bob!)).not.toContain(SECRET);
    expect(await sidecarExitLine('leaky-start')).toMatchObject({ level: 'warn', exitCode: 1, stderr: expect.stringContaining(`DB_PASSWORD=${SECRET}`) });
  });

  it('the worker never wrote the value, and no stack credential reached a log', () => {
    for (const worker of stack.history.filter((p) => p !== stack.sidecar)) {
      expect(worker.process.stdout()).not.toContain(SECRET);
      expect(worker.process.stderr()).not.toContain(SECRET);
    }
    expect(stack.sidecar.process.stdout()).not.toContain(SECRET);
    expect(stack.leakedSecrets()).toEqual([]);
  });
});
