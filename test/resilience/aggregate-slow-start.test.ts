/**
 * A `/mcp` session opened while one of the agent's servers has not answered its `initialize`, as a
 * user meets it walking the README: the worker under Deno and the sidecar CLI (`support/stack.ts`),
 * a stdio server that answers nothing until the test opens its gate (`raw-echo-server.mjs --gate`),
 * the worker's default wait for the servers' first answers (`aggregate-start-wait-seconds`).
 *
 * The agent gets its session and the servers that are up, the late one listed as
 * `<server>__unavailable` (reason `starting`), and the late one's tools once it answers, announced
 * with `notifications/tools/list_changed`. A modern (2026-07-28) list on `/mcp` is answered the
 * same way, without waiting for the late server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost } from '../modern/modern-client.ts';

let stack: Stack;
const dir = mkdtempSync(join(tmpdir(), 'sy-gate-'));
const gate = join(dir, 'open');

beforeAll(async () => {
  stack = await startStack({ servers: { files: fixtureServer('raw-echo-server.mjs'), slow: fixtureServer('raw-echo-server.mjs', '--gate', gate) } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name);

describe('/mcp with a server that has not answered initialize', () => {
  it('answers initialize without it, lists it as starting in both eras, then lists its tools once it answers', async () => {
    const client = await connectClient(`${stack.url}/mcp`, stack.tokens.alice!);
    try {
      const instructions = client.getInstructions() ?? '';
      expect(instructions).toContain('Available: files.');
      expect(instructions).toMatch(/- slow: starting: /);
      let changed!: () => void;
      const listChanged = new Promise<void>((resolve) => (changed = resolve));
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());

      const tools = (await client.listTools()).tools;
      expect(names(tools)).toEqual(expect.arrayContaining(['files__echo', 'slow__unavailable']));
      expect(tools.find((t) => t.name === 'slow__unavailable')?.description).toContain('Server "slow" is unavailable (reason: starting)');
      expect(await client.callTool({ name: 'files__echo', arguments: { message: 'meanwhile' } })).toEqual({ content: [{ type: 'text', text: 'Echo: meanwhile' }] });

      // A modern list does not wait for the late server either; the merged list is stale at once.
      const modern = await modernPost(`${stack.url}/mcp`, stack.tokens.alice!, 'tools/list');
      expect(names(modern.response.result.tools)).toEqual(expect.arrayContaining(['files__echo', 'slow__unavailable']));
      expect(modern.response.result.ttlMs).toBe(0);

      writeFileSync(gate, '');
      await listChanged;
      expect(names((await client.listTools()).tools)).toEqual(expect.arrayContaining(['files__echo', 'slow__echo']));
      expect(await client.callTool({ name: 'slow__echo', arguments: { message: 'up' } })).toEqual({ content: [{ type: 'text', text: 'Echo: up' }] });
      const later = await modernPost(`${stack.url}/mcp`, stack.tokens.alice!, 'tools/list');
      expect(names(later.response.result.tools)).toEqual(expect.arrayContaining(['files__echo', 'slow__echo']));
    } finally {
      await closeClient(client);
    }
  }, 60_000);
});
