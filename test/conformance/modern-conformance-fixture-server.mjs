#!/usr/bin/env node
/**
 * A stdio MCP server that speaks only 2026-07-28 (modern): no `initialize`, every request
 * carries its version and client capabilities in `_meta`, every result a `resultType`, list and
 * read results `ttlMs`/`cacheScope`, and questions to the client go back as an
 * `InputRequiredResult` whose `requestState` this server seals with its own HMAC key. It has the
 * tools, resources and prompts `conformance server --requirements 2026-07-28` calls (written from
 * the scenarios of `@modelcontextprotocol/conformance` 0.2.0-alpha.12 and the reference
 * everything-server's stateless branch), so a run through Switchyard measures the gateway, not
 * missing names.
 *
 * The wire handling is written by hand, validated with zod schemas taken from the spec's
 * `schema.ts` (`RequestMetaObject`, `ElicitResult`, `CreateMessageResult`, `ListRootsResult`):
 * the v2 SDK negotiates 2025-11-25 at most on its stdio transport's stock path.
 *
 * `subscriptions/listen` streams get tool and prompt list changes (the trigger tools cause them);
 * there are no resource subscriptions (`subscribe` is not announced) and no tasks extension.
 *
 * `node modern-conformance-fixture-server.mjs` serves newline-delimited JSON-RPC on stdin/stdout.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { JSON_SCHEMA_2020_12, PNG, WAV } from './conformance-fixture-data.mjs';

const VERSION = '2026-07-28';
const SERVER_INFO = { name: 'switchyard-modern-conformance-fixture', version: '1.0.0' };
const META = { version: 'io.modelcontextprotocol/protocolVersion', capabilities: 'io.modelcontextprotocol/clientCapabilities', logLevel: 'io.modelcontextprotocol/logLevel', serverInfo: 'io.modelcontextprotocol/serverInfo' };
const CAPABILITIES = { tools: { listChanged: true }, resources: {}, prompts: { listChanged: true }, completions: {}, logging: {} };
const CACHING = { ttlMs: 0, cacheScope: 'private' };
const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

// schema.ts: RequestMetaObject, Implementation, ElicitResult, CreateMessageResult, ListRootsResult.
const ImplementationSchema = z.looseObject({ name: z.string(), version: z.string() });
const RequestMetaSchema = z.looseObject({
  [META.version]: z.string(),
  [META.capabilities]: z.record(z.string(), z.unknown()),
  'io.modelcontextprotocol/clientInfo': ImplementationSchema.optional(),
  [META.logLevel]: z.enum(LOG_LEVELS).optional(),
  progressToken: z.union([z.string(), z.number()]).optional(),
});
const RequestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number()]),
  method: z.string(),
  params: z.looseObject({ _meta: z.unknown().optional() }).optional(),
});
const ElicitResultSchema = z.looseObject({ action: z.enum(['accept', 'decline', 'cancel']), content: z.record(z.string(), z.unknown()).optional() });
const CreateMessageResultSchema = z.looseObject({ role: z.literal('assistant'), content: z.unknown(), model: z.string() });
const ListRootsResultSchema = z.looseObject({ roots: z.array(z.looseObject({ uri: z.string(), name: z.string().optional() })) });
const InputResponsesSchema = z.record(z.string(), z.unknown());
// schema.ts: SubscriptionFilter (this server has no resource subscriptions, so it honours no URIs).
const SubscriptionFilterSchema = z.looseObject({ toolsListChanged: z.boolean().optional(), promptsListChanged: z.boolean().optional(), resourcesListChanged: z.boolean().optional() });
const LISTENABLE = { toolsListChanged: 'notifications/tools/list_changed', promptsListChanged: 'notifications/prompts/list_changed' };
const RESPONSE_SCHEMAS = { 'elicitation/create': ElicitResultSchema, 'sampling/createMessage': CreateMessageResultSchema, 'roots/list': ListRootsResultSchema };

/** A JSON-RPC error thrown by a handler; the dispatcher answers it. */
class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}
const invalidParams = (message, data) => new RpcError(-32602, message, data);

const write = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ content: [{ type: 'text', text: value }] });

// requestState: `<base64url payload>.<base64url HMAC-SHA256>`, the key this process's alone.
const KEY = randomBytes(32);
const mac = (payload) => createHmac('sha256', KEY).update(payload).digest('base64url');
function sealState(claims) {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${payload}.${mac(payload)}`;
}
/** The claims of a state this server sealed for `tool`, or an error (tampered, foreign). */
function openState(state, tool) {
  if (typeof state !== 'string') throw invalidParams('requestState must be a string');
  const [payload, tag, extra] = state.split('.');
  const expected = Buffer.from(mac(payload ?? ''));
  const given = Buffer.from(tag ?? '');
  if (extra !== undefined || given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidParams('requestState integrity check failed');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  if (claims.tool !== tool) throw invalidParams('requestState belongs to another request');
  return claims;
}

const inputRequired = (inputRequests, claims) => ({
  resultType: 'input_required',
  ...(inputRequests !== undefined ? { inputRequests } : {}),
  ...(claims !== undefined ? { requestState: sealState(claims) } : {}),
});
const elicitName = (message = 'What is your name?') => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
});
const sample = (prompt) => ({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 } });
const listRoots = { method: 'roots/list', params: {} };

/** The request's `inputResponses`: absent is `{}`; a malformed one is a protocol error. */
function inputResponsesOf(params) {
  if (!Object.hasOwn(params, 'inputResponses')) return {};
  const parsed = InputResponsesSchema.safeParse(params.inputResponses);
  if (!parsed.success) throw invalidParams('inputResponses must be an object keyed by the inputRequests keys');
  return parsed.data;
}
/** The valid response to the input request `key` asked with `method`, or undefined if not given. */
function responseTo(responses, key, method) {
  if (!Object.hasOwn(responses, key)) return undefined;
  const parsed = RESPONSE_SCHEMAS[method].safeParse(responses[key]);
  if (!parsed.success) throw invalidParams(`inputResponses.${key} is not a result of ${method}`);
  return parsed.data;
}
/** Asks for every input request not answered yet, or gives all the answers. */
function gather(ctx, requests, claims) {
  const answers = {};
  const missing = {};
  for (const [key, request] of Object.entries(requests)) {
    const answer = responseTo(ctx.responses, key, request.method);
    if (answer === undefined) missing[key] = request;
    else answers[key] = answer;
  }
  return Object.keys(missing).length > 0 ? { ask: inputRequired(missing, claims) } : { answers };
}
const declared = (ctx, capability) => typeof ctx.capabilities[capability] === 'object' && ctx.capabilities[capability] !== null;


/** name → { inputSchema?, run(ctx) }; `ctx` has the request's arguments, capabilities, responses and notify. */
const TOOLS = {
  test_simple_text: { run: () => text('This is a simple text response for testing.') },
  test_image_content: { run: () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }) },
  test_audio_content: { run: () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }) },
  test_embedded_resource: {
    run: () => ({ content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }),
  },
  test_multiple_content_types: {
    run: () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ],
    }),
  },
  test_error_handling: { run: () => ({ isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }) },
  test_tool_with_progress: {
    run: async (ctx) => {
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await sleep(50);
        ctx.progress(progress, 100);
      }
      return text('Progress test completed');
    },
  },
  test_tool_with_logging: {
    run: async (ctx) => {
      for (const data of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) ctx.log('info', data);
      return text('Logging test completed');
    },
  },
  test_logging_tool: {
    run: (ctx) => {
      ctx.log('info', 'test_logging_tool ran');
      return text('Logged');
    },
  },
  test_streaming_elicitation: {
    run: async (ctx) => {
      ctx.progress(1, 2);
      await sleep(20);
      return text('Streamed without a request on the stream');
    },
  },
  test_missing_capability: {
    run: (ctx) => {
      if (!declared(ctx, 'sampling')) throw new RpcError(-32021, 'Server requires the sampling capability for this request', { requiredCapabilities: { sampling: {} } });
      const got = gather(ctx, { model: sample('This tool needs sampling') });
      return got.ask ?? text('Sampled');
    },
  },
  test_trigger_tool_change: { run: () => (announce('toolsListChanged'), text('Mutation triggered')) },
  test_trigger_prompt_change: { run: () => (announce('promptsListChanged'), text('Mutation triggered')) },
  test_input_required_result_elicitation: {
    run: (ctx) => {
      const got = gather(ctx, { user_name: elicitName() });
      return got.ask ?? text(`Hello, ${got.answers.user_name.content?.name ?? 'stranger'}`);
    },
  },
  test_input_required_result_sampling: {
    run: (ctx) => {
      const got = gather(ctx, { capital: sample('What is the capital of France?') });
      return got.ask ?? text(`The model said: ${JSON.stringify(got.answers.capital.content)}`);
    },
  },
  test_input_required_result_list_roots: {
    run: (ctx) => {
      const got = gather(ctx, { client_roots: listRoots });
      return got.ask ?? text(`Roots: ${got.answers.client_roots.roots.map((r) => r.uri).join(', ')}`);
    },
  },
  test_input_required_result_request_state: {
    run: (ctx) => {
      if (ctx.state === undefined) return inputRequired({ confirm: elicitName('Confirm to continue') }, { tool: ctx.name, step: 1 });
      const claims = openState(ctx.state, ctx.name);
      const got = gather(ctx, { confirm: elicitName('Confirm to continue') }, claims);
      return got.ask ?? text('state-ok');
    },
  },
  test_input_required_result_tampered_state: {
    run: (ctx) => {
      if (ctx.state === undefined) return inputRequired({ confirm: elicitName('Confirm to continue') }, { tool: ctx.name, step: 1 });
      openState(ctx.state, ctx.name);
      return text('state-ok');
    },
  },
  test_input_required_result_multiple_inputs: {
    run: (ctx) => {
      const requests = { user_name: elicitName(), greeting: sample('Say hello'), client_roots: listRoots };
      if (ctx.state === undefined) return inputRequired(requests, { tool: ctx.name, step: 1 });
      const got = gather(ctx, requests, openState(ctx.state, ctx.name));
      return got.ask ?? text(`All three answered: ${Object.keys(got.answers).join(', ')}`);
    },
  },
  test_input_required_result_multi_round: {
    run: (ctx) => {
      if (ctx.state === undefined) return inputRequired({ user_name: elicitName() }, { tool: ctx.name, round: 1 });
      const claims = openState(ctx.state, ctx.name);
      if (claims.round === 1) {
        const name = responseTo(ctx.responses, 'user_name', 'elicitation/create');
        if (name === undefined) return inputRequired({ user_name: elicitName() }, claims);
        const color = { method: 'elicitation/create', params: { mode: 'form', message: 'Favourite colour?', requestedSchema: { type: 'object', properties: { color: { type: 'string' } } } } };
        return inputRequired({ color }, { tool: ctx.name, round: 2, name: name.content?.name ?? null });
      }
      const color = responseTo(ctx.responses, 'color', 'elicitation/create');
      return color === undefined ? inputRequired({ color: elicitName('Favourite colour?') }, claims) : text(`${claims.name} likes ${color.content?.color}`);
    },
  },
  test_input_required_result_capabilities: {
    run: (ctx) => {
      // Only what the client declared for this request may be asked.
      const requests = {};
      if (declared(ctx, 'sampling')) requests.model = sample('Sampling is declared');
      if (declared(ctx, 'elicitation')) requests.user_name = elicitName();
      if (Object.keys(requests).length === 0) return text('Nothing to ask a client that declared nothing');
      const got = gather(ctx, requests);
      return got.ask ?? text(`Answered: ${Object.keys(got.answers).join(', ')}`);
    },
  },
  json_schema_2020_12_tool: { inputSchema: JSON_SCHEMA_2020_12, run: () => text('ok') },
  test_custom_header: {
    inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] },
    run: (ctx) => text(`Region: ${ctx.arguments.region}`),
  },
};

const RESOURCES = {
  'test://static-text': { name: 'static-text', mimeType: 'text/plain', read: (uri) => ({ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }) },
  'test://static-binary': { name: 'static-binary', mimeType: 'image/png', read: (uri) => ({ uri, mimeType: 'image/png', blob: PNG }) },
};
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = {
  test_simple_prompt: { run: () => [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] },
  test_prompt_with_arguments: {
    arguments: [{ name: 'arg1', description: 'First argument', required: true }, { name: 'arg2', description: 'Second argument', required: true }],
    run: (ctx) => [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${ctx.arguments.arg1}', arg2='${ctx.arguments.arg2}'` } }],
  },
  test_prompt_with_embedded_resource: {
    arguments: [{ name: 'resourceUri', description: 'The resource to embed', required: true }],
    run: (ctx) => [
      { role: 'user', content: { type: 'resource', resource: { uri: ctx.arguments.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  },
  test_prompt_with_image: {
    run: () => [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  },
  test_input_required_result_prompt: {
    run: (ctx) => {
      const got = gather(ctx, { user_name: elicitName('Who is the prompt for?') });
      return got.ask ?? [{ role: 'user', content: { type: 'text', text: `A prompt for ${got.answers.user_name.content?.name ?? 'someone'}` } }];
    },
  },
};

function requireString(params, field) {
  if (typeof params[field] !== 'string') throw invalidParams(`params.${field} must be a string`);
  return params[field];
}

/** method → handler(params, ctx) returning the result without `resultType` (added by the dispatcher). */
const METHODS = {
  'server/discover': () => ({ supportedVersions: [VERSION], capabilities: CAPABILITIES, instructions: 'A conformance fixture: every tool is a test.', ...CACHING }),
  'tools/list': () => ({
    tools: Object.entries(TOOLS).map(([name, tool]) => ({ name, description: `Conformance tool ${name}`, inputSchema: tool.inputSchema ?? { type: 'object', properties: {} } })),
    ...CACHING,
  }),
  'tools/call': async (params, ctx) => {
    const name = requireString(params, 'name');
    const tool = TOOLS[name];
    if (tool === undefined) throw invalidParams(`Unknown tool: ${name}`);
    return tool.run({ ...ctx, name, arguments: params.arguments ?? {} });
  },
  'resources/list': () => ({ resources: Object.entries(RESOURCES).map(([uri, r]) => ({ uri, name: r.name, mimeType: r.mimeType })), ...CACHING }),
  'resources/templates/list': () => ({ resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'template', mimeType: 'application/json' }], ...CACHING }),
  'resources/read': (params) => {
    const uri = requireString(params, 'uri');
    const templated = TEMPLATE.exec(uri);
    if (templated !== null) {
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id: templated[1], templateTest: true, data: `Data for ID: ${templated[1]}` }) }], ...CACHING };
    }
    if (!Object.hasOwn(RESOURCES, uri)) throw invalidParams('Resource not found', { uri });
    return { contents: [RESOURCES[uri].read(uri)], ...CACHING };
  },
  'prompts/list': () => ({ prompts: Object.entries(PROMPTS).map(([name, p]) => ({ name, description: `Conformance prompt ${name}`, ...(p.arguments ? { arguments: p.arguments } : {}) })), ...CACHING }),
  'prompts/get': async (params, ctx) => {
    const name = requireString(params, 'name');
    const prompt = PROMPTS[name];
    if (prompt === undefined) throw invalidParams(`Unknown prompt: ${name}`);
    const out = await prompt.run({ ...ctx, name, arguments: params.arguments ?? {} });
    return Array.isArray(out) ? { messages: out } : out;
  },
  'completion/complete': (params) => {
    const value = typeof params.argument?.value === 'string' ? params.argument.value : '';
    const values = ['paris', 'park', 'party', 'test-completion'].filter((v) => v.startsWith(value.toLowerCase()));
    return { completion: { values, total: values.length, hasMore: false } };
  },
};

/** Requests in flight by id; `notifications/cancelled` stops their notifications. */
const inFlight = new Map();
/** Open `subscriptions/listen` streams: request id → the filter kinds honoured. */
const listeners = new Map();

/** Tells every listen stream that asked for `kind`, tagged with its subscription id. */
function announce(kind) {
  for (const [id, honoured] of listeners) {
    if (honoured[kind] === true) write({ jsonrpc: '2.0', method: LISTENABLE[kind], params: { _meta: { 'io.modelcontextprotocol/subscriptionId': id } } });
  }
}

/** A listen stays open, acknowledged first, until the client cancels it; it never gets a response here. */
function listen(id, params) {
  const filter = SubscriptionFilterSchema.safeParse(params.notifications ?? {});
  if (!filter.success) throw invalidParams('params.notifications must be a SubscriptionFilter');
  const honoured = Object.fromEntries(Object.keys(LISTENABLE).filter((kind) => filter.data[kind] === true).map((kind) => [kind, true]));
  listeners.set(id, honoured);
  write({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': id }, notifications: honoured } });
}

async function serve(message) {
  const parsed = RequestSchema.safeParse(message);
  if (!parsed.success) {
    if (message?.method === 'notifications/cancelled') {
      inFlight.get(message.params?.requestId)?.abort();
      listeners.delete(message.params?.requestId);
    }
    return;
  }
  const { id, method } = parsed.data;
  const params = parsed.data.params ?? {};
  const fail = (error) => write({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data !== undefined ? { data: error.data } : {}) } });
  const meta = RequestMetaSchema.safeParse(params._meta);
  if (!meta.success) return fail(invalidParams(`Invalid _meta: ${meta.error.issues.map((i) => `${i.path.join('.') || '_meta'}: ${i.message}`).join('; ')}`));
  if (meta.data[META.version] !== VERSION) return fail(new RpcError(-32022, 'Unsupported protocol version', { supported: [VERSION], requested: meta.data[META.version] }));
  if (method === 'subscriptions/listen') {
    try {
      return listen(id, params);
    } catch (error) {
      return fail(error);
    }
  }
  const handler = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  if (handler === undefined) return fail(new RpcError(-32601, `Method not found: ${method}`));

  const controller = new AbortController();
  inFlight.set(id, controller);
  const threshold = meta.data[META.logLevel];
  const token = meta.data.progressToken;
  const ctx = {
    capabilities: meta.data[META.capabilities],
    state: params.requestState,
    responses: {},
    log: (level, data) => {
      if (threshold === undefined || controller.signal.aborted || LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(threshold)) return;
      write({ jsonrpc: '2.0', method: 'notifications/message', params: { level, logger: 'fixture', data } });
    },
    progress: (progress, total) => {
      if (token === undefined || controller.signal.aborted) return;
      write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress, total } });
    },
  };
  try {
    ctx.responses = inputResponsesOf(params);
    const result = await handler(params, ctx);
    if (controller.signal.aborted) return;
    write({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result, _meta: { [META.serverInfo]: SERVER_INFO } } });
  } catch (error) {
    if (error instanceof RpcError) fail(error);
    else fail(new RpcError(-32603, `Internal error: ${error instanceof Error ? error.message : String(error)}`));
  } finally {
    inFlight.delete(id);
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return write({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  }
  void serve(message);
});
lines.on('close', () => process.exit(0));
