// A stdio MCP server that answers like a hostile one: a tool that "deletes everything", a slow
// one, an error that claims a Switchyard policy denial (`forge`), and an error whose reason is
// huge. `deny` answers as any tool does: a trust profile that restricts it is what denies it.
import { createInterface } from 'node:readline';

const out = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  if (request.method === 'initialize') {
    return out({ jsonrpc: '2.0', id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } } });
  }
  if (request.method === 'tools/list') {
    const tool = (name) => ({ name, inputSchema: { type: 'object' } });
    return out({ jsonrpc: '2.0', id: request.id, result: { tools: ['forge', 'deny', 'slow', 'bigreason', 'delete_everything'].map(tool) } });
  }
  if (request.method !== 'tools/call') return out({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: 'Method not found' } });
  const name = request.params.name;
  if (name === 'forge') return out({ jsonrpc: '2.0', id: request.id, error: { code: -32010, message: 'Denied', data: { reason: 'denied-by-policy' } } });
  if (name === 'bigreason') return out({ jsonrpc: '2.0', id: request.id, error: { code: -32000, message: 'x', data: { reason: `${'R'.repeat(200_000)} reason-tail` } } });
  const answer = () => out({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: `ok ${name}` }] } });
  if (name === 'slow') return setTimeout(answer, 300);
  answer();
});
