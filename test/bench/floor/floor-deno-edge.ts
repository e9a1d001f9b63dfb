/**
 * The Deno side of the floor relays (`floor.ts`): `Deno.serve` on 127.0.0.1, keep-alive, each POST
 * read with one `Request.text()` and handed to `FloorSessions`. Where the lines go depends on the
 * mode:
 *
 * - `stdio` (3-process floor): each session spawns the server itself (`Deno.Command`, piped) and
 *   writes and reads its lines;
 * - `link` (4-process floor): every session goes over the one WebSocket the Node relay
 *   (`floor-node-relay.ts`) dialled on `/link`, as text frames `<session> <line>`; a frame that is
 *   only `<session>` closes that session's server.
 *
 *   deno run --allow-net=127.0.0.1 --allow-run --allow-read test/bench/floor/floor-deno-edge.ts stdio|link PORT [SERVER COMMAND…]
 *
 * Prints `listening` once serving, and in link mode `linked` once the relay is connected.
 *
 * @module
 */
import { FloorSessions, lineSplitter, type OpenUpstream } from './floor-sessions.ts';

interface DenoChild {
  stdin: WritableStream<Uint8Array>;
  stdout: ReadableStream<Uint8Array>;
  kill(): void;
}
interface DenoApi {
  args: string[];
  serve(options: { port: number; hostname: string; onListen?: () => void }, handler: (request: Request) => Response | Promise<Response>): unknown;
  upgradeWebSocket(request: Request): { socket: WebSocket; response: Response };
  Command: new (command: string, options: { args: string[]; stdin: 'piped'; stdout: 'piped'; stderr: 'null' }) => { spawn(): DenoChild };
}

const deno = (globalThis as unknown as { Deno: DenoApi }).Deno;
const [mode, port, command, ...args] = deno.args;
if ((mode !== 'stdio' && mode !== 'link') || port === undefined || (mode === 'stdio' && command === undefined)) {
  throw new Error(`Usage: floor-deno-edge.ts stdio|link PORT [SERVER COMMAND…] (got ${deno.args.join(' ')})`);
}

const encoder = new TextEncoder();

const viaStdio: OpenUpstream = (_session, onLine) => {
  const child = new deno.Command(command!, { args, stdin: 'piped', stdout: 'piped', stderr: 'null' }).spawn();
  const writer = child.stdin.getWriter();
  void (async () => {
    const split = lineSplitter(onLine);
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) split(decoder.decode(chunk, { stream: true }));
  })().catch(() => {});
  return {
    write: (line) => void writer.write(encoder.encode(line + '\n')).catch(() => {}),
    close: () => {
      void writer.close().catch(() => {});
      try {
        child.kill();
      } catch {
        // Already gone.
      }
    },
  };
};

let link: WebSocket | null = null;
const routes = new Map<string, (line: string) => void>();
const viaLink: OpenUpstream = (session, onLine) => {
  routes.set(session, onLine);
  return {
    write: (line) => link!.send(`${session} ${line}`),
    close: () => {
      routes.delete(session);
      link?.send(session);
    },
  };
};

const sessions = new FloorSessions(mode === 'stdio' ? viaStdio : viaLink);
const JSON_HEADERS = { 'content-type': 'application/json' };

deno.serve({ port: Number(port), hostname: '127.0.0.1', onListen: () => console.log('listening') }, async (request) => {
  if (request.method === 'POST') {
    if (mode === 'link' && link === null) return new Response(null, { status: 503 });
    const answer = await sessions.post(request.headers.get('mcp-session-id'), await request.text());
    if (answer.body === '') return new Response(null, { status: answer.status });
    return new Response(answer.body, { status: answer.status, headers: answer.sessionId === undefined ? JSON_HEADERS : { ...JSON_HEADERS, 'mcp-session-id': answer.sessionId } });
  }
  if (request.method === 'DELETE') return new Response(null, { status: sessions.delete(request.headers.get('mcp-session-id')).status });
  if (mode === 'link' && request.method === 'GET' && new URL(request.url).pathname === '/link') {
    const { socket, response } = deno.upgradeWebSocket(request);
    socket.onopen = () => {
      link = socket;
      console.log('linked');
    };
    socket.onmessage = (event: MessageEvent<string>) => {
      const text = event.data;
      const cut = text.indexOf(' ');
      routes.get(text.slice(0, cut))?.(text.slice(cut + 1));
    };
    return response;
  }
  // No standalone SSE stream: the SDK client takes a 405 to mean that.
  return new Response(null, { status: 405, headers: { allow: 'POST, DELETE' } });
});
