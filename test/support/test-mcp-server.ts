/**
 * A small in-process MCP server for route tests: one tool per behaviour the worker must pass on
 * unchanged (a result, an `isError` result, progress, a sampling request, an elicitation request,
 * logging), a prompt, a prompt that fails with a JSON-RPC error carrying `data.reason`, a
 * resource and a resource template.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

export function createTestMcpServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { logging: {} }, instructions: `Instructions of ${name}` });
  server.registerTool('echo', { description: 'Echoes', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `${name}: ${text}` }],
  }));
  server.registerTool('fail', { description: 'Tool error' }, async () => ({
    isError: true,
    content: [{ type: 'text', text: `${name} failed on purpose` }],
  }));
  server.registerTool('progress', { description: 'Reports progress' }, async (extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= 3; i++) {
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: 3 } });
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  server.registerTool('sample', { description: 'Asks the client to sample' }, async (extra) => {
    const result = await extra.sendRequest(
      { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 } },
      z.object({ content: z.object({ type: z.string(), text: z.string() }) }).passthrough() as never,
    );
    return { content: [{ type: 'text', text: `sampled: ${JSON.stringify((result as { content: unknown }).content)}` }] };
  });
  server.registerTool('elicit', { description: 'Asks the user' }, async () => {
    const result = await server.server.elicitInput({
      message: 'Your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    });
    return { content: [{ type: 'text', text: `elicited: ${JSON.stringify(result)}` }] };
  });
  server.registerTool('log', { description: 'Logs one message' }, async (extra) => {
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: name, data: 'logged' } });
    return { content: [{ type: 'text', text: 'logged' }] };
  });
  server.registerPrompt('greet', { description: 'Greets', argsSchema: { who: z.string() } }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `${name} greets ${who}` } }],
  }));
  // McpServer turns a throwing tool into an isError result; a throwing prompt is a JSON-RPC error.
  server.registerPrompt('explode', { description: 'Protocol error' }, () => {
    // Not McpError, whose message gains an "MCP error <code>: " prefix at every throw.
    throw Object.assign(new Error('Denied on purpose'), { code: -32010, data: { reason: 'denied-by-policy', prompt: 'explode' } });
  });
  server.registerResource('readme', `test://${name}/readme`, { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: `readme of ${name}` }],
  }));
  server.registerResource('item', new ResourceTemplate(`test://${name}/items/{id}`, { list: undefined }), {}, async (uri, { id }) => ({
    contents: [{ uri: uri.href, text: `item ${String(id)} of ${name}` }],
  }));
  return server;
}
