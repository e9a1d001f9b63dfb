/**
 * The 3-process floor in Node (`floor.ts`), the shape of supergateway: `node:http` on 127.0.0.1
 * (keep-alive, as Node serves by default), each POST's body collected into one string and handed
 * to `FloorSessions`, each session's server spawned here with piped stdio.
 *
 *   node floor-node-http.js PORT SERVER COMMAND…
 *
 * Prints `listening` once serving.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { FloorSessions, lineSplitter, type OpenUpstream } from './floor-sessions.ts';

const [port, command, ...args] = process.argv.slice(2);
if (port === undefined || command === undefined) throw new Error(`Usage: floor-node-http.js PORT SERVER COMMAND… (got ${process.argv.slice(2).join(' ')})`);

const viaStdio: OpenUpstream = (_session, onLine) => {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdout.setEncoding('utf8').on('data', lineSplitter(onLine));
  child.stdin.on('error', () => {});
  return { write: (line) => void child.stdin.write(line + '\n'), close: () => void child.kill() };
};

const sessions = new FloorSessions(viaStdio);
const header = (value: string | string[] | undefined) => (typeof value === 'string' ? value : null);

const server = createServer((request, response) => {
  if (request.method === 'DELETE') {
    response.writeHead(sessions.delete(header(request.headers['mcp-session-id'])).status).end();
    return;
  }
  if (request.method !== 'POST') {
    // No standalone SSE stream: the SDK client takes a 405 to mean that.
    response.writeHead(405, { allow: 'POST, DELETE' }).end();
    return;
  }
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => (body += chunk));
  request.on('end', () => {
    void Promise.resolve(sessions.post(header(request.headers['mcp-session-id']), body)).then((answer) => {
      if (answer.body === '') {
        response.writeHead(answer.status).end();
        return;
      }
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (answer.sessionId !== undefined) headers['mcp-session-id'] = answer.sessionId;
      response.writeHead(answer.status, headers).end(answer.body);
    });
  });
});
server.listen(Number(port), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => {
  sessions.closeAll();
  process.exit(0);
});
