#!/usr/bin/env node
/**
 * An MCP server with the tools, resources and prompts the official conformance scenarios call
 * (`test_simple_text`, `test_tool_with_progress`, `test://static-text`, `test_simple_prompt`, …),
 * written from the scenario descriptions of `@modelcontextprotocol/conformance` (`conformance list
 * --server`, and each scenario's "Server Implementation Requirements"). server-everything fails
 * most scenarios for want of these names, which leaves the passthrough's interesting paths
 * (progress, logging, sampling and elicitation routed between streams) unmeasured; this server
 * makes them count.
 *
 * `node conformance-fixture-server.mjs stdio` serves one session on stdin/stdout (as a sidecar
 * launches it). `node conformance-fixture-server.mjs http` serves Streamable HTTP with sessions
 * on 127.0.0.1:$PORT/mcp, with the SDK's stock transport and defaults (no event store, no
 * DNS-rebinding option: the SDK as a server author gets it), and prints `listening on port N` on
 * stderr. Both modes build the same server (`createServer`).
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CreateMessageResultSchema, ElicitResultSchema, isInitializeRequest, ListRootsResultSchema, SubscribeRequestSchema, UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { JSON_SCHEMA_2020_12, PNG, WAV } from './conformance-fixture-data.mjs';

/** Tools whose inputSchema is given as JSON Schema, not built by the SDK. */
const RAW_SCHEMA_TOOLS = [
  { name: 'json_schema_2020_12_tool', description: 'JSON Schema 2020-12 keywords, kept as written', inputSchema: JSON_SCHEMA_2020_12 },
  {
    name: 'test_custom_header',
    description: 'An argument mirrored into the Mcp-Param-Region header',
    inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] },
  },
];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ content: [{ type: 'text', text: value }] });

function createServer() {
  const server = new McpServer(
    { name: 'switchyard-conformance-fixture', version: '1.0.0' },
    { capabilities: { logging: {}, resources: { subscribe: true }, completions: {} } },
  );
  const tool = (name, config, handler) => server.registerTool(name, { description: `Conformance tool ${name}`, ...config }, handler);

  tool('test_simple_text', {}, async () => text('This is a simple text response for testing.'));
  tool('test_image_content', {}, async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  tool('test_audio_content', {}, async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', {}, async () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  tool('test_multiple_content_types', {}, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
  tool('test_tool_with_logging', {}, async (extra) => {
    for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i > 0) await sleep(50);
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
    }
    return text('Logging test completed');
  });
  tool('test_error_handling', {}, async () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  tool('test_tool_with_progress', {}, async (extra) => {
    const progressToken = extra._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progress > 0) await sleep(50);
      if (progressToken !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
    }
    return text('Progress test completed');
  });
  tool('test_sampling', { inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
    const result = await extra.sendRequest(
      { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 } },
      CreateMessageResultSchema,
    );
    return text(`LLM response: ${result.content.type === 'text' ? result.content.text : result.content.type}`);
  });
  const elicit = async (extra, message, properties, required = []) => {
    const result = await extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema: { type: 'object', properties, required } } }, ElicitResultSchema);
    return text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
  };
  tool('test_elicitation', { inputSchema: { message: z.string() } }, async ({ message }, extra) =>
    elicit(extra, message, { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } }, ['username', 'email']),
  );
  tool('test_elicitation_sep1034_defaults', {}, async (extra) =>
    elicit(extra, 'Defaults for every primitive type', {
      name: { type: 'string', default: 'John Doe' },
      age: { type: 'integer', default: 30 },
      score: { type: 'number', default: 95.5 },
      status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
      verified: { type: 'boolean', default: true },
    }),
  );
  tool('test_elicitation_sep1330_enums', {}, async (extra) =>
    elicit(extra, 'Every enum variant', {
      untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
      titledSingle: { type: 'string', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }] },
      legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
      untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
      titledMulti: { type: 'array', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }] } },
    }),
  );

  // The 2026-07-28 scenarios' tools, written the legacy way: where the modern fixture answers
  // with an InputRequiredResult, these ask their client mid-call (elicitation/create,
  // sampling/createMessage, roots/list), which the host bridges into one for a modern agent.
  const askName = (extra, message = 'What is your name?') =>
    extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } }, ElicitResultSchema);
  const askModel = (extra, prompt) =>
    extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 } }, CreateMessageResultSchema);
  const askRoots = (extra) => extra.sendRequest({ method: 'roots/list', params: {} }, ListRootsResultSchema);
  const answered = (label, value) => text(`${label}: ${JSON.stringify(value)}`);
  tool('test_missing_capability', {}, async (extra) => answered('sampled', await askModel(extra, 'This tool needs sampling')));
  tool('test_logging_tool', {}, async (extra) => {
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'A log line nobody asked for' } });
    return text('Logged');
  });
  tool('test_streaming_elicitation', {}, async (extra) => answered('elicited', await askName(extra)));
  tool('test_trigger_tool_change', {}, async () => {
    await server.server.sendToolListChanged();
    return text('Mutation triggered');
  });
  tool('test_trigger_prompt_change', {}, async () => {
    await server.server.sendPromptListChanged();
    return text('Mutation triggered');
  });
  tool('test_input_required_result_elicitation', {}, async (extra) => answered('elicited', await askName(extra)));
  tool('test_input_required_result_sampling', {}, async (extra) => answered('sampled', await askModel(extra, 'What is the capital of France?')));
  tool('test_input_required_result_list_roots', {}, async (extra) => answered('roots', await askRoots(extra)));
  tool('test_input_required_result_request_state', {}, async (extra) => text(`state-ok: ${JSON.stringify(await askName(extra))}`));
  tool('test_input_required_result_tampered_state', {}, async (extra) => answered('elicited', await askName(extra)));
  tool('test_input_required_result_multiple_inputs', {}, async (extra) => {
    const [elicited, sampled, roots] = await Promise.all([askName(extra), askModel(extra, 'Say hello'), askRoots(extra)]);
    return answered('all', { elicited, sampled, roots });
  });
  tool('test_input_required_result_multi_round', {}, async (extra) => {
    const first = await askName(extra);
    const second = await extra.sendRequest({ method: 'elicitation/create', params: { message: 'Favourite colour?', requestedSchema: { type: 'object', properties: { color: { type: 'string' } } } } }, ElicitResultSchema);
    return answered('rounds', [first, second]);
  });
  tool('test_input_required_result_capabilities', {}, async (extra) => {
    const [sampled, elicited] = await Promise.all([askModel(extra, 'Sampling is declared'), askName(extra, 'Elicitation is not')]);
    return answered('both', { sampled, elicited });
  });
  // McpServer builds every inputSchema from zod; these must reach the client as written (JSON
  // Schema 2020-12 keywords, an `x-mcp-header` annotation), so they join the SDK's own answers.
  const listTools = server.server._requestHandlers.get('tools/list');
  server.server._requestHandlers.set('tools/list', async (request, extra) => {
    const listed = await listTools(request, extra);
    return { ...listed, tools: [...listed.tools, ...RAW_SCHEMA_TOOLS] };
  });
  server.server._requestHandlers.set('tools/call', ((callTool) => async (request, extra) => {
    const raw = RAW_SCHEMA_TOOLS.find((t) => t.name === request.params.name);
    return raw === undefined ? callTool(request, extra) : text(`${raw.name}: ${JSON.stringify(request.params.arguments ?? {})}`);
  })(server.server._requestHandlers.get('tools/call')));
  server.registerPrompt('test_input_required_result_prompt', { description: 'A prompt that asks its client first' }, async (extra) => {
    const elicited = await askName(extra);
    return { messages: [{ role: 'user', content: { type: 'text', text: `Prompt for ${JSON.stringify(elicited.content ?? {})}` } }] };
  });

  server.registerResource('static-text', 'test://static-text', { description: 'Static text', mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  server.registerResource('static-binary', 'test://static-binary', { description: 'Static binary', mimeType: 'image/png' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }],
  }));
  server.registerResource('watched-resource', 'test://watched-resource', { description: 'Subscribable', mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }],
  }));
  server.registerResource('template', new ResourceTemplate('test://template/{id}/data', { list: undefined }), { description: 'Template', mimeType: 'application/json' }, async (uri, { id }) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
  }));
  server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  server.server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));

  server.registerPrompt('test_simple_prompt', { description: 'A simple prompt' }, async () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    { description: 'A prompt with arguments', argsSchema: { arg1: completable(z.string(), (value) => ['paris', 'park', 'party'].filter((v) => v.startsWith(value))), arg2: z.string() } },
    async ({ arg1, arg2 }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }),
  );
  server.registerPrompt('test_prompt_with_embedded_resource', { description: 'A prompt with a resource', argsSchema: { resourceUri: z.string() } }, async ({ resourceUri }) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  }));
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
  return server;
}

const mode = process.argv[2] ?? 'stdio';
if (mode === 'stdio') {
  await createServer().connect(new StdioServerTransport());
} else if (mode === 'http') {
  /** Session id → transport, as in the SDK's own Streamable HTTP server examples. */
  const transports = new Map();
  const http = createHttpServer(async (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    let body;
    try {
      body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
    }
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? transports.get(id) : undefined;
    if (transport === undefined && id === undefined && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => transports.set(sid, transport) });
      transport.onclose = () => transports.delete(transport.sessionId);
      await createServer().connect(transport);
    }
    if (transport === undefined) {
      return void res.writeHead(id === undefined ? 400 : 404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null }));
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.error(`listening on port ${http.address().port}`));
} else {
  console.error(`usage: conformance-fixture-server.mjs stdio|http`);
  process.exit(2);
}
