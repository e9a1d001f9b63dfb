import { afterEach, describe, expect, it, vi } from 'vitest';
import { advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';
import {
  CallToolResultSchema, ListRootsRequestSchema, SubscribeRequestSchema, ListToolsRequestSchema, ResultSchema, CreateMessageRequestSchema, CreateMessageResultSchema, ElicitRequestSchema, InitializeRequestSchema, LoggingMessageNotificationSchema, McpError,
  PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema, ToolListChangedNotificationSchema, type ClientCapabilities, type InitializeRequest, type InitializeResult,
} from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WireError } from '../../shared/errors.ts';
import { createTestMcpServer } from '../../test/support/test-mcp-server.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';
import { hostCredential, workerHostEntry } from '../../test/support/configs.ts';
import { sha256Hex } from '../auth/agent-auth.ts';
import { parseWorkerConfig } from '../config/worker-config.ts';
import { composeWorker } from '../compose.ts';
import { auditFromConfig } from '../../shared/audit/audit-from-config.ts';
import { createLogger, silentLogger } from '../../shared/log.ts';
import { createApp } from '../app.ts';
import { InMemorySessionTable } from '../sessions/session-table.ts';
import { AgentRequestCounters } from '../sessions/request-limits.ts';
import { WorkerAudit } from '../audit/worker-audit.ts';

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function setup(servers = ['alpha', 'beta']) {
  const router = new InProcessRouter({ alpha: createTestMcpServer, beta: createTestMcpServer });
  const config = await testConfig([{ name: 'alice', servers }, { name: 'bob', servers: ['gamma'] }], ['alpha', 'beta', 'gamma']);
  harness = startInProcessApp(config, router);
  return { router, harness };
}

/**
 * Alice's alpha and beta with the worker's audit lines kept, and lazy reconnects spaced an hour
 * apart: longer than any test, so what a call does before the spacing is over is all there is to see.
 */
async function setupAudited() {
  const router = new InProcessRouter({ alpha: createTestMcpServer, beta: createTestMcpServer });
  const config = await testConfig([{ name: 'alice', servers: ['alpha', 'beta'] }], ['alpha', 'beta']);
  const lines: Array<Record<string, unknown>> = [];
  const { audit: log } = auditFromConfig(config.audit, { component: 'worker', write: (line) => lines.push(JSON.parse(line)), log: silentLogger });
  harness = startInProcessApp(config, router, { audit: new WorkerAudit({ config, log: log! }), retryAfterMs: 3_600_000 });
  const audited = (event: string) => lines.filter((l) => l.event === event).map((l) => [l.server, l.method, l.tool ?? l.prompt, l.decision, l.reason]);
  return { router, harness, audited };
}

const OFFLINE = () => new WireError('host-offline', 'Host "laptop" is offline: its sidecar has no live link to this worker');

interface Heard {
  waiting?: boolean;
  toolCancelled?: unknown;
  /** Resolves once the agent has the server's question. */
  asked: Promise<void>;
}

/** A server whose tool `wait` ends only when cancelled, and whose `ask` cancels its own sampling request. */
function cancellingServer(heard: Heard): McpServer {
  const server = new McpServer({ name: 'c', version: '1.0.0' });
  server.registerTool('wait', { description: 'Waits for its cancellation' }, async (extra) => {
    heard.waiting = true;
    await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve()));
    heard.toolCancelled = extra.signal.reason;
    return { content: [] };
  });
  server.registerTool('ask', { description: 'Asks, then takes the question back' }, async (extra) => {
    const controller = new AbortController();
    const asked = extra.sendRequest(
      { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } },
      CreateMessageResultSchema,
      { signal: controller.signal },
    ).catch(() => 'withdrawn');
    await heard.asked;
    controller.abort('changed my mind');
    return { content: [{ type: 'text', text: String(await asked) }] };
  });
  return server;
}

/**
 * A test server still starting: it has the aggregate's `initialize` (`asked`) but answers it only
 * after `release()`, as a server launched by npx, or one that never answers, does.
 */
function startingServer(make: (name: string) => McpServer = createTestMcpServer) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = { asked: 0, released: false };
  const factory = (name: string): McpServer => {
    const server = make(name);
    const sdk = server.server as unknown as { _oninitialize(request: InitializeRequest): Promise<InitializeResult> };
    server.server.setRequestHandler(InitializeRequestSchema, async (request) => {
      state.asked++;
      await gate;
      return sdk._oninitialize(request);
    });
    return server;
  };
  return { factory, state, release: () => { state.released = true; release(); } };
}

/**
 * The test server whose `chatter` logs one line at `info` and one at `error` as a server logs on
 * its own (`sendLoggingMessage`): only what the level it was last set to lets through.
 */
function loggingServer(name: string): McpServer {
  const server = createTestMcpServer(name);
  server.registerTool('chatter', { description: 'Logs at info and at error' }, async () => {
    await server.server.sendLoggingMessage({ level: 'info', logger: name, data: 'info line' });
    await server.server.sendLoggingMessage({ level: 'error', logger: name, data: 'error line' });
    return { content: [] };
  });
  return server;
}

/** The `[logger, data]` of every log line the agent gets. */
function logLines(client: Client): unknown[] {
  const lines: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void lines.push([n.params.logger, n.params.data]));
  return lines;
}

/** Alice's alpha and a beta still starting; /mcp waits `wait` seconds for the servers' first answers. */
async function setupStarting(wait = 0.5) {
  const beta = startingServer();
  const router = new InProcessRouter({ alpha: createTestMcpServer, beta: beta.factory });
  const config = await testConfig([{ name: 'alice', servers: ['alpha', 'beta'] }], ['alpha', 'beta'], { 'aggregate-start-wait-seconds': wait });
  harness = startInProcessApp(config, router);
  return { beta, router, harness };
}

describe('/mcp aggregate', () => {
  it('lists every server\'s tools and prompts as <server>__<name> and routes calls back', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    expect(router.opened.map((o) => o.connection['server-name']).sort()).toEqual(['alpha', 'beta']);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['alpha__echo', 'beta__echo', 'alpha__fail', 'beta__progress']));
    expect(await client.callTool({ name: 'beta__echo', arguments: { text: 'hi' } })).toEqual({ content: [{ type: 'text', text: 'beta: hi' }] });
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['alpha__greet', 'beta__greet']));
    const prompt = await client.getPrompt({ name: 'alpha__greet', arguments: { who: 'Ada' } });
    expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: 'alpha greets Ada' });
  });

  it('passes tool errors and JSON-RPC errors through unchanged', async () => {
    const { harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    expect(await client.callTool({ name: 'alpha__fail', arguments: {} })).toEqual({ isError: true, content: [{ type: 'text', text: 'alpha failed on purpose' }] });
    const error = (await client.getPrompt({ name: 'beta__explode' }).catch((e: unknown) => e)) as McpError;
    expect(error).toBeInstanceOf(McpError);
    expect(error.code).toBe(-32010);
    expect(error.message).toBe('MCP error -32010: Denied on purpose');
    expect(error.data).toEqual({ reason: 'denied-by-policy', prompt: 'explode' });
    const unknown = (await client.callTool({ name: 'gamma__echo', arguments: {} }).catch((e: unknown) => e)) as McpError;
    expect(unknown.code).toBe(-32602);
  });

  it('keeps resource URIs and routes reads by URI and template', async () => {
    const { harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    const uris = (await client.listResources()).resources.map((r) => r.uri);
    expect(uris).toEqual(expect.arrayContaining(['test://alpha/readme', 'test://beta/readme']));
    expect((await client.readResource({ uri: 'test://beta/readme' })).contents[0]).toMatchObject({ text: 'readme of beta' });
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    expect(templates).toEqual(expect.arrayContaining(['test://alpha/items/{id}']));
    expect((await client.readResource({ uri: 'test://alpha/items/7' })).contents[0]).toMatchObject({ text: 'item 7 of alpha' });
  });

  it('relays progress under the agent\'s token, logging, sampling and elicitation', async () => {
    const { harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token', { sampling: {}, elicitation: {} });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'test', content: { type: 'text', text: 'sampled-by-agent' } }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void logs.push(n.params.data));
    const progress: number[] = [];
    await client.callTool({ name: 'alpha__progress', arguments: {} }, CallToolResultSchema, { onprogress: (p) => void progress.push(p.progress) });
    expect(progress).toEqual([1, 2, 3]);
    expect(JSON.stringify(await client.callTool({ name: 'beta__sample', arguments: {} }))).toContain('sampled-by-agent');
    expect(JSON.stringify(await client.callTool({ name: 'alpha__elicit', arguments: {} }))).toContain('Ada');
    await client.callTool({ name: 'alpha__log', arguments: {} });
    expect(logs).toEqual(['logged']);
  });

  it('passes cancellation both ways: the agent cancelling a call, a server withdrawing its question', async () => {
    let agentAsked!: () => void;
    const heard: Heard = { asked: new Promise<void>((resolve) => (agentAsked = resolve)) };
    const router = new InProcessRouter({ c: () => cancellingServer(heard) });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['c'] }], ['c']), router);
    const client = await harness.client('/mcp', 'alice-token', { sampling: {} });

    const controller = new AbortController();
    const call = client.callTool({ name: 'c__wait', arguments: {} }, CallToolResultSchema, { signal: controller.signal }).catch((e: unknown) => e);
    await expect.poll(() => heard.waiting).toBe(true);
    controller.abort('no longer needed');
    await call;
    await expect.poll(() => heard.toolCancelled).toBe('no longer needed');

    let agentSawCancel: unknown;
    client.setRequestHandler(CreateMessageRequestSchema, async (_request, extra) => {
      agentAsked();
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve()));
      agentSawCancel = extra.signal.reason;
      return { role: 'assistant', model: 'm', content: { type: 'text', text: 'too late' } };
    });
    expect(await client.callTool({ name: 'c__ask', arguments: {} })).toEqual({ content: [{ type: 'text', text: 'withdrawn' }] });
    await expect.poll(() => agentSawCancel).toBeDefined();
  });

  it('refuses sampling for an agent that did not declare it', async () => {
    const { harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    const result = await client.callTool({ name: 'alpha__sample', arguments: {} });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result)).toContain('does not support sampling/createMessage');
  });

  it('shows a refused server as <server>__unavailable with its reason, in the tools and the instructions', async () => {
    const { router, harness } = await setup();
    router.failures.set('beta', new WireError('host-offline', 'Host "laptop" is offline: its sidecar has no live link to this worker'));
    const client = await harness.client('/mcp', 'alice-token');
    expect(client.getInstructions()).toContain('- beta: host-offline: Host "laptop" is offline');
    const tools = (await client.listTools()).tools;
    const placeholder = tools.find((t) => t.name === 'beta__unavailable');
    expect(placeholder?.description).toContain('Server "beta" is unavailable (reason: host-offline)');
    expect(tools.some((t) => t.name === 'alpha__echo')).toBe(true);
    const result = await client.callTool({ name: 'beta__unavailable', arguments: {} });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ server: 'beta', reason: 'host-offline' });
  });

  it('reconnects a server that was offline on the next list', async () => {
    const { router, harness } = await setup();
    router.failures.set('beta', new WireError('host-offline', 'offline'));
    const client = await harness.client('/mcp', 'alice-token');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('beta__unavailable');
    router.failures.delete('beta');
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('beta__echo');
    expect(names).not.toContain('beta__unavailable');
  });

  it('routes a call naming a server whose host was offline at initialize once the host is back, without a list first, and announces it', async () => {
    const { router, harness, audited } = await setupAudited();
    router.failures.set('beta', OFFLINE());
    const client = await harness.client('/mcp', 'alice-token');
    expect(client.getInstructions()).toContain('- beta: host-offline');
    let changed!: () => void;
    const listChanged = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());
    router.failures.delete('beta');
    // Well inside the hour between lazy reconnects: a call asks an offline host again at once.
    expect(await client.callTool({ name: 'beta__echo', arguments: { text: 'back' } })).toEqual({ content: [{ type: 'text', text: 'beta: back' }] });
    await listChanged;
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('beta__unavailable');
    expect(audited('call')).toEqual([['beta', 'tools/call', 'echo', 'allowed', undefined]]);
  });

  it('refuses a call naming a server whose host is still offline with that reason, after asking again, and puts it on the record', async () => {
    const { router, harness, audited } = await setupAudited();
    router.failures.set('beta', OFFLINE());
    const client = await harness.client('/mcp', 'alice-token');
    const call = (await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(call).toBeInstanceOf(McpError);
    expect(call.code).toBe(-32003);
    expect(call.data).toEqual({ reason: 'host-offline' });
    expect(call.message).toBe('MCP error -32003: Server "beta" is unavailable: Host "laptop" is offline: its sidecar has no live link to this worker');
    const prompt = (await client.getPrompt({ name: 'beta__greet' }).catch((e: unknown) => e)) as McpError;
    expect(prompt.data).toEqual({ reason: 'host-offline' });
    // The open at initialize, then one for each call.
    expect(audited('open')).toEqual(Array.from({ length: 3 }, () => ['beta', 'initialize', undefined, 'refused', 'host-offline']));
    expect(audited('call')).toEqual([
      ['beta', 'tools/call', 'echo', 'refused', 'host-offline'],
      ['beta', 'prompts/get', 'greet', 'refused', 'host-offline'],
    ]);
  });

  it('refuses a call naming a server whose launch failed with that reason, without launching it again before the spacing is over', async () => {
    const { router, harness, audited } = await setupAudited();
    router.failures.set('beta', new WireError('launch-failed', 'Server "beta" could not start: exit code 1'));
    const client = await harness.client('/mcp', 'alice-token');
    router.failures.delete('beta');
    const call = (await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(call.data).toEqual({ reason: 'launch-failed' });
    expect(call.message).toContain('Server "beta" is unavailable: Server "beta" could not start');
    expect(router.opened.map((o) => o.connection['server-name'])).toEqual(['alpha']);
    expect(audited('open')).toEqual([['beta', 'initialize', undefined, 'refused', 'launch-failed']]);
    expect(audited('call')).toEqual([['beta', 'tools/call', 'echo', 'refused', 'launch-failed']]);
  });

  it('refuses a read of a resource a server that went down named, by its URI or its template, with that server\'s reason, not by asking another server (review s20)', async () => {
    const { router, harness, audited } = await setupAudited();
    const client = await harness.client('/mcp', 'alice-token');
    await client.listResources();
    await client.listResourceTemplates();
    let changed!: () => void;
    const listChanged = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());
    router.failures.set('beta', new WireError('launch-failed', 'Server "beta" could not start: exit code 1'));
    await router.opened.find((o) => o.connection['server-name'] === 'beta')!.serverEnd.close({ reason: 'server-exited', message: 'exit code 1' });
    await listChanged;
    for (const uri of ['test://beta/readme', 'test://beta/items/7']) {
      const read = (await client.readResource({ uri }).catch((e: unknown) => e)) as McpError;
      expect(read).toBeInstanceOf(McpError);
      expect(read.data).toMatchObject({ reason: 'server-exited' });
      expect(read.message).toContain('Server "beta" is unavailable');
    }
    // Alpha, the one resource server left, was never asked; its own URIs still route.
    expect(audited('call').filter(([server]) => server === 'alpha')).toEqual([]);
    expect((await client.readResource({ uri: 'test://alpha/readme' })).contents[0]).toMatchObject({ text: 'readme of alpha' });
    expect(audited('call').map(([server, method, , decision]) => [server, method, decision])).toEqual([
      ['beta', 'resources/read', 'refused'], ['beta', 'resources/read', 'refused'], ['alpha', 'resources/read', 'allowed'],
    ]);
  });

  it('announces a list change when a server goes away, then shows it unavailable with the reason', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    await client.listTools();
    let changed!: () => void;
    const listChanged = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());
    router.failures.set('beta', new WireError('host-offline', 'still offline'));
    const beta = router.opened.find((o) => o.connection['server-name'] === 'beta')!;
    await beta.serverEnd.close({ reason: 'server-exited', message: 'exit code 1' });
    await listChanged;
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === 'beta__unavailable')?.description).toContain('host-offline');
    const error = (await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(error.data).toMatchObject({ reason: 'host-offline' });
  });

  it('closes every upstream channel when the agent deletes the session', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    expect(router.openChannels()).toBe(2);
    await (client.transport as unknown as { terminateSession(): Promise<void> }).terminateSession();
    await expect.poll(() => router.openChannels()).toBe(0);
    expect(harness.sessions.size).toBe(0);
  });

  it('passes the agent\'s trust context and session id to the router', async () => {
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    harness = startInProcessApp(await testConfig([{ name: 'carol', servers: ['alpha'], containment: 'required' }], ['alpha']), router);
    const client = await harness.client('/mcp', 'carol-token');
    const [opened] = router.opened;
    expect(opened!.trust).toEqual({ containment: 'required' });
    expect(opened!.connection).toEqual({
      'server-name': 'alpha',
      'trust-profile-ref': 'workspace',
      'trust-profile-revision': `sha256:${'0'.repeat(64)}`,
      session: (client.transport as { sessionId?: string }).sessionId,
      agent: 'carol',
      // The agent sent no traceparent: the worker started a trace, and the host joins it.
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/),
    });
  });

  it('answers initialize while a server has not answered its own, lists it as starting, then lists its tools after announcing the change', async () => {
    const { beta, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    // Answered while beta still holds the aggregate's initialize.
    expect(beta.state).toEqual({ asked: 1, released: false });
    const instructions = client.getInstructions() ?? '';
    expect(instructions).toContain('Available: alpha.');
    expect(instructions).toContain('- beta: starting:');
    expect(instructions).toContain('notifications/tools/list_changed');
    let changed!: () => void;
    const listChanged = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());

    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['alpha__echo', 'beta__unavailable']));
    expect(tools.find((t) => t.name === 'beta__unavailable')?.description).toContain('Server "beta" is unavailable (reason: starting)');
    expect(await client.callTool({ name: 'alpha__echo', arguments: { text: 'meanwhile' } })).toEqual({ content: [{ type: 'text', text: 'alpha: meanwhile' }] });
    // The placeholder answers at once with the reason; the list did not wait for beta either.
    const placeholder = await client.callTool({ name: 'beta__unavailable', arguments: {} });
    expect(placeholder).toMatchObject({ isError: true, structuredContent: { server: 'beta', reason: 'starting' } });
    expect(beta.state).toEqual({ asked: 1, released: false });

    beta.release();
    await listChanged;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['alpha__echo', 'beta__echo']));
    expect(names).not.toContain('beta__unavailable');
    // The open that went on in the background is the one the session uses: beta was asked once.
    expect(beta.state.asked).toBe(1);
  });

  it('lists without waiting again for a server still starting past the wait, which announces itself when it comes up (review s24: each list waited it out)', async () => {
    useFakeClock();
    try {
      const { beta, harness } = await setupStarting(30);
      // Initialize waits the 30 s for beta; the lists after it do not.
      const client = await advanceUntilSettled(harness.client('/mcp', 'alice-token'));
      for (let list = 0; list < 3; list++) {
        const tools = await advanceUntilSettled(client.listTools(), { limitMs: 1_000 });
        expect(tools.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['alpha__echo', 'beta__unavailable']));
      }
      expect(beta.state).toEqual({ asked: 1, released: false });
    } finally {
      vi.useRealTimers();
    }
  });

  it('lets a call naming a server still starting wait for its open, then routes it', async () => {
    const { beta, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    expect(beta.state.released).toBe(false);
    const call = client.callTool({ name: 'beta__echo', arguments: { text: 'waited' } }).then((result) => ({ result, releasedFirst: beta.state.released }));
    // The call has reached the session (it is in flight there) before beta answers.
    const session = harness.sessions.get((client.transport as { sessionId?: string }).sessionId!)!;
    const before = Date.now();
    await expect.poll(() => session.inFlight).toBe(1);
    // What the session table's busy limit counts from: this call's arrival.
    expect(session.oldestInFlightAt).toBeGreaterThanOrEqual(before);
    expect(session.oldestInFlightAt).toBeLessThanOrEqual(Date.now());
    beta.release();
    expect(await call).toEqual({ result: { content: [{ type: 'text', text: 'beta: waited' }] }, releasedFirst: true });
    expect([session.inFlight, session.oldestInFlightAt]).toEqual([0, undefined]);
  });

  it('lets a resource read no connected server is known to serve wait for a server still starting, then routes it there', async () => {
    const { beta, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    const session = harness.sessions.get((client.transport as { sessionId?: string }).sessionId!)!;
    const read = client.readResource({ uri: 'test://beta/readme' }).then((result) => ({ contents: result.contents, releasedFirst: beta.state.released }));
    await expect.poll(() => session.inFlight).toBe(1);
    beta.release();
    expect(await read).toEqual({ contents: [{ uri: 'test://beta/readme', text: 'readme of beta' }], releasedFirst: true });
  });

  it('answers a resource read "Resource not found" only once the servers still starting are up and none of them serves it', async () => {
    const { beta, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    const session = harness.sessions.get((client.transport as { sessionId?: string }).sessionId!)!;
    const read = client.readResource({ uri: 'test://nowhere/x' }).catch((error: unknown) => ({ error, releasedFirst: beta.state.released }));
    await expect.poll(() => session.inFlight).toBe(1);
    beta.release();
    const { error, releasedFirst } = (await read) as { error: McpError; releasedFirst: boolean };
    expect(releasedFirst).toBe(true);
    expect(error).toBeInstanceOf(McpError);
    expect(error.code).toBe(-32002);
    expect(error.message).toBe('MCP error -32002: Resource not found: test://nowhere/x');
    expect(error.data).toEqual({ uri: 'test://nowhere/x', reason: 'invalid-request' });
  });

  it('lists the other servers\' tools when one that is up never answers its list, within the start wait, and sets log levels without waiting on it (review s20)', async () => {
    const hung = (name: string) => {
      const server = createTestMcpServer(name);
      server.server.setRequestHandler(ListToolsRequestSchema, () => new Promise(() => {}));
      return server;
    };
    const router = new InProcessRouter({ alpha: createTestMcpServer, slow: hung });
    const config = await testConfig([{ name: 'alice', servers: ['alpha', 'slow'] }], ['alpha', 'slow'], { 'aggregate-start-wait-seconds': 0.5 });
    harness = startInProcessApp(config, router);
    const client = await harness.client('/mcp', 'alice-token');
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('alpha__echo');
    expect(names.filter((n) => n.startsWith('slow__'))).toEqual([]);
    expect(await client.setLoggingLevel('debug')).toEqual({});
  });

  it('asks the agent for its roots when a server asks as soon as it is initialized, while /mcp is still starting (review s20)', async () => {
    let roots: unknown;
    const rooted = (name: string) => {
      const server = createTestMcpServer(name);
      // As server-filesystem does: roots/list right after notifications/initialized.
      server.server.oninitialized = () => void server.server.listRoots().then((r) => (roots = r.roots), (error: unknown) => (roots = String(error)));
      return server;
    };
    const router = new InProcessRouter({ alpha: rooted });
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']);
    harness = startInProcessApp(config, router);
    const client = new Client({ name: 'agent', version: '1.0.0' }, { capabilities: { roots: {} } });
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', BASE), { fetch: harness.fetch, requestInit: { headers: { authorization: 'Bearer alice-token' } } }));
    await expect.poll(() => roots).toEqual([{ uri: 'file:///work', name: 'work' }]);
    await client.close();
  });

  it('makes the agent\'s resource subscriptions again on a server that came back (review s20)', async () => {
    const subscribed: string[][] = [];
    const subscribing = (name: string) => {
      const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { resources: { subscribe: true } } });
      server.registerResource('one', 'test://r/1', {}, async () => ({ contents: [{ uri: 'test://r/1', text: 'one' }] }));
      const mine: string[] = [];
      subscribed.push(mine);
      server.server.setRequestHandler(SubscribeRequestSchema, async (request) => (mine.push(request.params.uri), {}));
      return server;
    };
    const router = new InProcessRouter({ res: subscribing });
    const config = await testConfig([{ name: 'alice', servers: ['res'] }], ['res']);
    harness = startInProcessApp(config, router);
    const client = await harness.client('/mcp', 'alice-token');
    await client.subscribeResource({ uri: 'test://r/1' });
    expect(subscribed).toEqual([['test://r/1']]);
    // The server goes away, and is connected again by the agent's next list.
    await router.opened[0]!.serverEnd.close();
    await expect.poll(async () => (await client.listResources()).resources.map((r) => r.uri)).toEqual(['test://r/1']);
    await expect.poll(() => subscribed).toEqual([['test://r/1'], ['test://r/1']]);
  });

  it('gives its own refusals a reason, as every error the worker writes has (review s20)', async () => {
    const { harness } = await setup();
    const client = await harness.client('/mcp', 'alice-token');
    const refusal = (work: Promise<unknown>) => work.then(() => null, (error: McpError) => [error.code, error.data]);
    expect(await refusal(client.request({ method: 'no/such/method', params: {} }, ResultSchema))).toEqual([-32601, { reason: 'invalid-request' }]);
    expect(await refusal(client.request({ method: 'tools/call', params: { arguments: {} } }, ResultSchema))).toEqual([-32602, { reason: 'invalid-request' }]);
    // Arguments that are no object would get a server's -32603 and its schema library's dump.
    for (const method of ['tools/call', 'prompts/get']) {
      const wrong = client.request({ method, params: { name: 'alpha__echo', arguments: 'zzz' } }, ResultSchema);
      await expect(wrong).rejects.toMatchObject({ code: -32602, message: 'MCP error -32602: Invalid params: params.arguments must be an object', data: { reason: 'invalid-request' } });
    }
  });

  it('gives a resource read waiting for a server still starting back as soon as the agent cancels it', async () => {
    const { beta, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    const session = harness.sessions.get((client.transport as { sessionId?: string }).sessionId!)!;
    const abort = new AbortController();
    const read = client.readResource({ uri: 'test://beta/readme' }, { signal: abort.signal }).catch((error: unknown) => error);
    await expect.poll(() => session.inFlight).toBe(1);
    abort.abort('changed my mind');
    await read;
    await expect.poll(() => session.inFlight).toBe(0);
    expect(beta.state.released).toBe(false);
    beta.release();
  });

  it('routes a resource read by a template of a server whose host was offline at initialize once the host is back, without a list first', async () => {
    const { router, harness } = await setup();
    router.failures.set('beta', OFFLINE());
    const client = await harness.client('/mcp', 'alice-token');
    expect(client.getInstructions()).toContain('- beta: host-offline');
    router.failures.delete('beta');
    expect((await client.readResource({ uri: 'test://beta/items/7' })).contents).toEqual([{ uri: 'test://beta/items/7', text: 'item 7 of beta' }]);
  });

  it('announces the list changes of a server that came up before the agent opened its standalone stream once the agent opens it', async () => {
    const { beta, router, harness } = await setupStarting(0.1);
    let letGetThrough!: () => void;
    const getMayGo = new Promise<void>((resolve) => (letGetThrough = resolve));
    let getAnswered!: () => void;
    const streamOpen = new Promise<void>((resolve) => (getAnswered = resolve));
    // The agent's GET (its standalone stream) is held until the test lets it through.
    const fetch = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      if (init?.method !== 'GET') return harness.fetch(url, init);
      await getMayGo;
      const response = await harness.fetch(url, init);
      getAnswered();
      return response;
    };
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', BASE), { fetch, requestInit: { headers: { authorization: 'Bearer alice-token' } } });
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    try {
      await client.connect(transport);
      const heard: string[] = [];
      let logged!: () => void;
      const log = new Promise<void>((resolve) => (logged = resolve));
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void heard.push('tools'));
      client.setNotificationHandler(PromptListChangedNotificationSchema, async () => void heard.push('prompts'));
      client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => void heard.push('resources'));
      client.setNotificationHandler(LoggingMessageNotificationSchema, async () => {
        heard.push('log');
        logged();
      });
      const session = harness.sessions.get(transport.sessionId!)!;
      beta.release();
      // beta is up, and its coming up was announced, while the agent had no stream to hear it on.
      await expect.poll(() => session.channelCount).toBe(2);
      letGetThrough();
      await streamOpen;
      // Sent on the standalone stream after it opened: what the agent missed comes before it.
      await router.opened.find((o) => o.connection['server-name'] === 'beta')!.server.server.sendLoggingMessage({ level: 'info', data: 'after' });
      await log;
      expect(heard).toEqual(['tools', 'prompts', 'resources', 'log']);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it('closes the channel of a server still starting when the session ends', async () => {
    const { beta, router, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    const opened = router.opened.find((o) => o.connection['server-name'] === 'beta')!;
    expect(opened.channel.closed).toBe(false);
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    await expect.poll(() => opened.channel.closed).toBe(true);
    expect(beta.state.released).toBe(false);
    beta.release();
  });

  it('gives a call waiting for a server still starting back as soon as the agent cancels it', async () => {
    const { beta, harness } = await setupStarting();
    const client = await harness.client('/mcp', 'alice-token');
    const session = harness.sessions.get((client.transport as { sessionId?: string }).sessionId!)!;
    const abort = new AbortController();
    const call = client.callTool({ name: 'beta__echo', arguments: { text: 'never' } }, undefined, { signal: abort.signal }).catch((error: unknown) => error);
    await expect.poll(() => session.inFlight).toBe(1);
    abort.abort('changed my mind');
    await call;
    // Settled while beta is still opening: the session holds nothing for it (and can idle out).
    await expect.poll(() => session.inFlight).toBe(0);
    expect(beta.state.released).toBe(false);
    beta.release();
  });

  it('gives a server that was still starting when the agent set its log level that level as it connects', async () => {
    const beta = startingServer(loggingServer);
    const router = new InProcessRouter({ alpha: loggingServer, beta: beta.factory });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha', 'beta'] }], ['alpha', 'beta'], { 'aggregate-start-wait-seconds': 0.1 }), router);
    const client = await harness.client('/mcp', 'alice-token');
    const lines = logLines(client);
    await client.setLoggingLevel('error');
    const changed = next(client, ToolListChangedNotificationSchema);
    beta.release();
    await changed;
    await client.callTool({ name: 'alpha__chatter', arguments: {} });
    await client.callTool({ name: 'beta__chatter', arguments: {} });
    expect(lines).toEqual([['alpha', 'error line'], ['beta', 'error line']]);
  });

  it('gives a server that was offline when the agent set its log level that level when a call brings it back, before the call', async () => {
    const router = new InProcessRouter({ alpha: loggingServer, beta: loggingServer });
    router.failures.set('beta', OFFLINE());
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha', 'beta'] }], ['alpha', 'beta']), router);
    const client = await harness.client('/mcp', 'alice-token');
    const lines = logLines(client);
    await client.setLoggingLevel('error');
    router.failures.delete('beta');
    await client.callTool({ name: 'beta__chatter', arguments: {} });
    expect(lines).toEqual([['beta', 'error line']]);
  });

  it('tells the agent why its host ended a server, without sending it to open a session that opens the server again itself', async () => {
    const { router, harness } = await setupAudited();
    const client = await harness.client('/mcp', 'alice-token');
    let changed!: () => void;
    const listChanged = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());
    const beta = router.opened.find((o) => o.connection['server-name'] === 'beta')!;
    // The host's words when it ends a server whose mcp.json entry changed (sidecar/host/remote-mcp-host-handler.ts).
    await beta.serverEnd.close({ reason: 'server-exited', message: 'Server "beta" was ended: its config on this host changed' });
    await listChanged;
    const call = (await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(call.data).toEqual({ reason: 'server-exited' });
    expect(call.message).toBe('MCP error -32009: Server "beta" is unavailable: Server "beta" was ended: its config on this host changed');
    const placeholder = (await client.listTools()).tools.find((t) => t.name === 'beta__unavailable');
    expect(placeholder?.description).toContain('Server "beta" was ended: its config on this host changed');
  });
});

/**
 * The worker as `compose.ts` puts it together, whose `reload` puts a new config in force as a
 * file change or SIGHUP does; its servers are bound to `{"type":"local"}` and served in process
 * by `router`, so a test can bind one elsewhere (host "laptop", never linked here: host-offline).
 */
async function setupComposed(factories: Record<string, (name: string) => McpServer>, alice: string[], extra: Record<string, unknown> = {}) {
  const router = new InProcessRouter(factories);
  const host = hostCredential('laptop');
  const raw = async (servers: string[], options: { executors?: Record<string, unknown>; token?: string; trust?: Record<string, string> } = {}) => ({
    agents: [{ name: 'alice', 'token-sha256': await sha256Hex(options.token ?? 'alice-token'), servers, ...(options.trust !== undefined ? { 'trust-context': options.trust } : {}) }],
    hosts: [workerHostEntry(host)],
    servers: Object.fromEntries(Object.keys(factories).map((s) => [s, { executor: options.executors?.[s] ?? { type: 'local' } }])),
    ...extra,
  });
  const configOf = async (servers: string[], options: { executors?: Record<string, unknown>; token?: string; trust?: Record<string, string> } = {}) => parseWorkerConfig(await raw(servers, options), { runtime: 'node' });
  const lines: Array<Record<string, unknown>> = [];
  const worker = composeWorker({
    config: await configOf(alice),
    localHost: (request) => router.open({ type: 'local' }, request.connection, {}),
    auditWrite: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>),
    retryAfterMs: 3_600_000,
  });
  const fetch = (url: string | URL, init?: RequestInit) => Promise.resolve(worker.fetch(new Request(url, init)));
  const clients: Client[] = [];
  const connect = async (path: string, capabilities: ClientCapabilities = {}) => {
    const transport = new StreamableHTTPClientTransport(new URL(path, BASE), { fetch, requestInit: { headers: { authorization: 'Bearer alice-token' } } });
    const client = new Client({ name: 'test-agent', version: '1.0.0' }, { capabilities });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  composed = {
    async close() {
      await Promise.allSettled(clients.map(async (c) => {
        await (c.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
        await c.close();
      }));
      await worker.close();
    },
  };
  const audited = (event: string) => lines.filter((l) => l.event === event).map((l) => [l.server, l.method, l.tool ?? l.prompt, l.decision, l.reason]);
  return { router, worker, configOf, connect, audited, lines };
}

let composed: { close(): Promise<void> } | undefined;
afterEach(async () => {
  await composed?.close();
  composed = undefined;
});

/** Resolves at the agent's next notification `schema`. */
function next(client: Client, schema: typeof ToolListChangedNotificationSchema | typeof PromptListChangedNotificationSchema | typeof ResourceListChangedNotificationSchema): Promise<void> {
  return new Promise<void>((resolve) => client.setNotificationHandler(schema, async () => resolve()));
}

const sessionOf = (client: Client) => (client.transport as { sessionId?: string }).sessionId!;
const toolNames = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);

describe('/mcp across a worker config reload', () => {
  it('brings a session that was still opening when the reload came to the config in force: a server taken away meanwhile is gone from it', async () => {
    const gamma = startingServer();
    const { worker, configOf, connect } = await setupComposed({ alpha: createTestMcpServer, beta: createTestMcpServer, gamma: gamma.factory }, ['alpha', 'beta', 'gamma'], { 'aggregate-start-wait-seconds': 60 });
    const opening = connect('/mcp');
    // initialize waits for gamma: the session is not in the table yet when beta is taken away.
    await expect.poll(() => gamma.state.asked).toBe(1);
    expect(await worker.reload(await configOf(['alpha', 'gamma']))).toEqual({ endedSessions: 0 });
    gamma.release();
    const client = await opening;
    expect((await toolNames(client)).filter((n) => n.startsWith('beta__'))).toEqual([]);
    const call = (await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(call.data).toEqual({ reason: 'server-not-found' });
  });

  it('ends a session that was still opening when a reload changed its agent, as the reload would have', async () => {
    const gamma = startingServer();
    const { worker, configOf, connect } = await setupComposed({ alpha: createTestMcpServer, gamma: gamma.factory }, ['alpha', 'gamma'], { 'aggregate-start-wait-seconds': 60 });
    const opening = connect('/mcp');
    await expect.poll(() => gamma.state.asked).toBe(1);
    await worker.reload(await configOf(['alpha', 'gamma'], { trust: { 'trust-profile-ref': 'workspace', 'trust-profile-revision': `sha256:${'1'.repeat(64)}` } }));
    gamma.release();
    // The client's next message after initialize (its initialized notification) learns why.
    const ended = (await opening.catch((e: unknown) => e)) as Error;
    expect(ended.message).toContain('Session ended: the worker config changed: agent trust context changed; initialize a new session');
  });

  it('keeps the session when a server is taken from the agent: its channel closes, its names leave the lists with list changes, a call naming it is refused as a name the agent may not use', async () => {
    const { router, worker, configOf, connect, audited } = await setupComposed({ alpha: createTestMcpServer, beta: createTestMcpServer }, ['alpha', 'beta']);
    const client = await connect('/mcp');
    const alphaOnly = await connect('/servers/alpha/mcp');
    const betaOnly = await connect('/servers/beta/mcp');
    expect(await toolNames(client)).toEqual(expect.arrayContaining(['alpha__echo', 'beta__echo']));
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain('test://beta/readme');
    const [tools, prompts, resources] = [next(client, ToolListChangedNotificationSchema), next(client, PromptListChangedNotificationSchema), next(client, ResourceListChangedNotificationSchema)];

    // beta is taken from alice: her /servers/beta/mcp session ends (as before), her /mcp session does not.
    expect(await worker.reload(await configOf(['alpha']))).toEqual({ endedSessions: 1 });
    await Promise.all([tools, prompts, resources]);
    const betaChannel = router.opened.find((o) => o.connection['server-name'] === 'beta' && o.connection.session === sessionOf(client))!;
    expect(betaChannel.channel.closed).toBe(true);

    const names = await toolNames(client);
    expect(names).toContain('alpha__echo');
    expect(names.filter((n) => n.startsWith('beta__'))).toEqual([]);
    expect((await client.listPrompts()).prompts.map((p) => p.name).filter((n) => n.startsWith('beta__'))).toEqual([]);
    expect((await client.listResources()).resources.map((r) => r.uri)).not.toContain('test://beta/readme');
    expect(await client.callTool({ name: 'alpha__echo', arguments: { text: 'still here' } })).toEqual({ content: [{ type: 'text', text: 'alpha: still here' }] });

    const call = (await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(call).toBeInstanceOf(McpError);
    expect(call.code).toBe(-32602);
    expect(call.data).toEqual({ reason: 'server-not-found' });
    const prompt = (await client.getPrompt({ name: 'beta__greet', arguments: { who: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(prompt.data).toEqual({ reason: 'server-not-found' });
    const read = (await client.readResource({ uri: 'test://beta/readme' }).catch((e: unknown) => e)) as McpError;
    // Routed among the servers left: alpha, the only one offering resources now, says it has no such resource.
    expect(read).toBeInstanceOf(McpError);
    expect(read.message).toContain('Resource test://beta/readme not found');
    expect(audited('call').filter(([, , , decision]) => decision === 'refused')).toEqual([
      [null, 'tools/call', 'beta__echo', 'refused', 'server-not-found'],
      [null, 'prompts/get', 'beta__greet', 'refused', 'server-not-found'],
    ]);

    expect(await alphaOnly.callTool({ name: 'echo', arguments: { text: 'passthrough' } })).toEqual({ content: [{ type: 'text', text: 'alpha: passthrough' }] });
    const ended = (await betaOnly.callTool({ name: 'echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as Error;
    // Ended by the reload (the one session it ended), which its next request learns (review s24:
    // it was told only that beta is not a server she may use).
    expect(ended.message).toContain('Session ended: the worker config changed: server \\"beta\\" no longer allowed');
    expect(ended.message).toContain('"endedBecause":"config-changed"');
  });

  it('answers a call in flight on a server taken from the agent, with the reason, instead of leaving it hanging', async () => {
    const { worker, configOf, connect } = await setupComposed({ alpha: createTestMcpServer, beta: createTestMcpServer }, ['alpha', 'beta']);
    let asked!: () => void;
    const agentAsked = new Promise<void>((resolve) => (asked = resolve));
    const client = await connect('/mcp', { sampling: {} });
    // The agent holds beta's sampling question, so the call is in flight when beta goes.
    client.setRequestHandler(CreateMessageRequestSchema, async (_request, extra) => {
      asked();
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve()));
      return { role: 'assistant', model: 'm', content: { type: 'text', text: 'too late' } };
    });
    const call = client.callTool({ name: 'beta__sample', arguments: {} }).catch((e: unknown) => e);
    await agentAsked;
    await worker.reload(await configOf(['alpha']));
    const error = (await call) as McpError;
    expect(error).toBeInstanceOf(McpError);
    expect(error.data).toEqual({ reason: 'server-not-found' });
    expect(error.message).toBe("MCP error -31002: Server \"beta\" disconnected: it was taken from this session by a worker config change: it is no longer one of this agent's servers");
  });

  it('offers a server given to the agent from the next list on the same session: opened as at initialize, listed as starting until it answers, announced when it is up', async () => {
    const gamma = startingServer();
    const { router, worker, configOf, connect } = await setupComposed({ alpha: createTestMcpServer, gamma: gamma.factory }, ['alpha'], { 'aggregate-start-wait-seconds': 0.5 });
    const client = await connect('/mcp');
    expect(await toolNames(client)).not.toContain('gamma__unavailable');
    const changed = next(client, ToolListChangedNotificationSchema);

    expect(await worker.reload(await configOf(['alpha', 'gamma']))).toEqual({ endedSessions: 0 });
    // Opened for this session, under its id, as at initialize.
    await expect.poll(() => gamma.state.asked).toBe(1);
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === 'gamma__unavailable')?.description).toContain('Server "gamma" is unavailable (reason: starting)');
    expect(tools.map((t) => t.name)).toContain('alpha__echo');

    gamma.release();
    await changed;
    const names = await toolNames(client);
    expect(names).toEqual(expect.arrayContaining(['alpha__echo', 'gamma__echo']));
    expect(names).not.toContain('gamma__unavailable');
    expect(await client.callTool({ name: 'gamma__echo', arguments: { text: 'new' } })).toEqual({ content: [{ type: 'text', text: 'gamma: new' }] });
    expect(router.opened.filter((o) => o.connection['server-name'] === 'gamma').map((o) => o.connection.session)).toEqual([sessionOf(client)]);
    expect(gamma.state.asked).toBe(1);
  });

  it('gives a server given to the agent after it set its log level that level as it connects', async () => {
    const { worker, configOf, connect } = await setupComposed({ alpha: loggingServer, gamma: loggingServer }, ['alpha']);
    const client = await connect('/mcp');
    const lines = logLines(client);
    await client.setLoggingLevel('error');
    const changed = next(client, ToolListChangedNotificationSchema);
    await worker.reload(await configOf(['alpha', 'gamma']));
    await changed;
    await client.callTool({ name: 'gamma__chatter', arguments: {} });
    expect(lines).toEqual([['gamma', 'error line']]);
  });

  it('drops the open of a server taken from the agent while it was still starting, closing its channel when it answers', async () => {
    const gamma = startingServer();
    const { router, worker, configOf, connect } = await setupComposed({ alpha: createTestMcpServer, gamma: gamma.factory }, ['alpha', 'gamma'], { 'aggregate-start-wait-seconds': 0.1 });
    const client = await connect('/mcp');
    expect(await toolNames(client)).toContain('gamma__unavailable');
    const changed = next(client, ToolListChangedNotificationSchema);
    await worker.reload(await configOf(['alpha']));
    await changed;
    expect((await toolNames(client)).filter((n) => n.startsWith('gamma__'))).toEqual([]);
    gamma.release();
    const opened = router.opened.find((o) => o.connection['server-name'] === 'gamma')!;
    await expect.poll(() => opened.channel.closed).toBe(true);
    expect((await toolNames(client)).filter((n) => n.startsWith('gamma__'))).toEqual([]);
    const call = (await client.callTool({ name: 'gamma__echo', arguments: { text: 'x' } }).catch((e: unknown) => e)) as McpError;
    expect(call.data).toEqual({ reason: 'server-not-found' });
  });

  it('closes a server bound elsewhere and opens it again at its new binding, on the same session', async () => {
    const { router, worker, configOf, connect, lines } = await setupComposed({ alpha: createTestMcpServer, beta: createTestMcpServer }, ['alpha', 'beta']);
    const client = await connect('/mcp');
    expect(await toolNames(client)).toContain('beta__echo');
    const first = router.opened.find((o) => o.connection['server-name'] === 'beta')!;

    // Bound to host "laptop", which has no link here.
    let changed = next(client, ToolListChangedNotificationSchema);
    const onLaptop = { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } };
    expect(await worker.reload(await configOf(['alpha', 'beta'], { executors: { beta: onLaptop } }))).toEqual({ endedSessions: 0 });
    await changed;
    expect(first.channel.closed).toBe(true);
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === 'beta__unavailable')?.description).toContain('reason: host-offline');
    expect(tools.map((t) => t.name)).not.toContain('beta__echo');
    // Its refused open is on the record under its new binding's host: the config in force's audit, not the session's first one.
    expect(lines.filter((l) => l.event === 'open').map((l) => [l.server, l.host, l.reason, l.session])).toEqual([['beta', 'laptop', 'host-offline', sessionOf(client)]]);
    expect(await client.callTool({ name: 'alpha__echo', arguments: { text: 'a' } })).toEqual({ content: [{ type: 'text', text: 'alpha: a' }] });

    // And back to this machine: opened again there.
    changed = next(client, ToolListChangedNotificationSchema);
    await worker.reload(await configOf(['alpha', 'beta']));
    await changed;
    expect(await client.callTool({ name: 'beta__echo', arguments: { text: 'back' } })).toEqual({ content: [{ type: 'text', text: 'beta: back' }] });
    expect(router.opened.filter((o) => o.connection['server-name'] === 'beta')).toHaveLength(2);
  });

  it('still ends the session when the change is about the agent itself (its token)', async () => {
    const { worker, configOf, connect } = await setupComposed({ alpha: createTestMcpServer }, ['alpha']);
    const client = await connect('/mcp');
    expect(await worker.reload(await configOf(['alpha'], { token: 'alice-new-token' }))).toEqual({ endedSessions: 1 });
    expect(worker.sessions.size).toBe(0);
  });
});

describe('/mcp aggregate answers left unread', () => {
  it('logs the stream it ends for an agent past the bound on unread answers, naming the agent and the session', async () => {
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']);
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({ write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const sessions = new InMemorySessionTable({ idleMs: 60_000 });
    const requestCounters = new AgentRequestCounters({ maxUnreadBytes: 1_000, hardUnreadBytes: 1_000 });
    const app = createApp({ config, router, sessions, log, retryAfterMs: 0, requestCounters });
    try {
      const headers = { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const post = (body: unknown, extra: Record<string, string> = {}) => app.request(`${BASE}/mcp`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
      const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      const session = init.headers.get('mcp-session-id')!;
      await init.text();
      const inSession = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, inSession)).text();
      const echo = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'alpha__echo', arguments: { text: 'e'.repeat(5_000) } } });
      // Neither answer is read: the second finds the first past alice's bound, and ends the stream.
      const batch = await post([echo(1), echo(2)], inSession);
      await expect.poll(() => lines.find((l) => l.msg === 'SSE stream ended: the agent left it unread')).toMatchObject({ agent: 'alice', session });
      await expect(batch.text()).rejects.toThrow('SSE stream ended');
    } finally {
      await sessions.closeAll();
      sessions.dispose();
    }
  });
});
