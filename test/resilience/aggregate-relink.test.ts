/**
 * A `/mcp` session opened while a server's host is offline, as a user meets it walking the
 * README: the worker under Deno and the sidecar CLI (`support/stack.ts`), the sidecar stopped
 * before the agent connects and started again later. A client that only calls (it does not list
 * again on `tools/list_changed`) is refused with `host-offline` while the host is away, each call
 * on the worker's audit record, and reaches the server on the same session once the host is back.
 * A modern (2026-07-28) request keeps no session: each one opens its channels afresh, so it needs
 * nothing kept to reach a host that came back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { HOST_A, startStack, type Stack } from '../support/stack.ts';
import { modernPost } from '../modern/modern-client.ts';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { files: fixtureServer('raw-echo-server.mjs') } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('/mcp session opened while a host is offline', () => {
  it('refuses a call of that host\'s server with host-offline, on the record, then routes it on the same session once the host relinks', async () => {
    await stack.sidecar.process.stop();
    await stack.waitLinked(false);
    const client = await connectClient(`${stack.url}/mcp`, stack.tokens.alice!);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('files__unavailable');

      const refused = (await client.callTool({ name: 'files__echo', arguments: { message: 'away' } }).catch((e: unknown) => e)) as McpError;
      expect(refused).toBeInstanceOf(McpError);
      expect(refused.data).toEqual({ reason: 'host-offline' });
      expect(refused.message).toMatch(/Server "files" is unavailable: Host "res-host-a" is offline/);
      const line = await stack.worker.err.waitFor((l) => l.json.msg === 'audit' && l.json.event === 'call' && l.json.tool === 'echo', 'the refused call\'s audit line');
      expect(line.json).toMatchObject({ agent: 'alice', server: 'files', host: HOST_A, route: 'aggregate', era: 'legacy', method: 'tools/call', decision: 'refused', outcome: 'error', reason: 'host-offline' });

      stack.startSidecar();
      await stack.waitLinked();
      expect(await client.callTool({ name: 'files__echo', arguments: { message: 'back' } })).toEqual({ content: [{ type: 'text', text: 'Echo: back' }] });
      const allowed = await stack.worker.err.waitFor((l) => l.json.msg === 'audit' && l.json.event === 'call' && l.json.decision === 'allowed', 'the routed call\'s audit line');
      expect(allowed.json).toMatchObject({ server: 'files', tool: 'echo', outcome: 'ok' });
    } finally {
      await closeClient(client);
    }
  });

  it('in the modern era, where each request opens its own channels, refuses a call with host-offline on the record, then routes it once the host relinks', async () => {
    await stack.sidecar.process.stop();
    await stack.waitLinked(false);
    const call = (message: string) => modernPost(`${stack.url}/mcp`, stack.tokens.alice!, 'tools/call', { name: 'files__echo', arguments: { message } });
    const from = stack.worker.err.lines.length;

    const refused = await call('away');
    expect(refused.response.error).toMatchObject({ code: -32003, data: { reason: 'host-offline' } });
    const line = await stack.worker.err.waitFor((l) => l.json.msg === 'audit' && l.json.event === 'call', 'the refused modern call\'s audit line', { from });
    expect(line.json).toMatchObject({ agent: 'alice', server: 'files', route: 'aggregate', era: 'modern', tool: 'echo', decision: 'refused', reason: 'host-offline' });

    stack.startSidecar();
    await stack.waitLinked();
    expect((await call('back')).response.result).toMatchObject({ content: [{ type: 'text', text: 'Echo: back' }] });
  });
});
