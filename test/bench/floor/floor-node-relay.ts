/**
 * The Node relay of the 4-process floor (`floor.ts`): dials the Deno edge's `/link` with the
 * WebSocket library the sidecar uses (`ws`, client side, so its frames are masked, as the
 * sidecar's are), and for each session named in a frame spawns the server, writes each frame's
 * line to its stdin and sends each stdout line back as `<session> <line>`. A frame that is only
 * `<session>` ends that server. It reads no JSON: the edge does.
 *
 *   node floor-node-relay.js ws://127.0.0.1:PORT/link SERVER COMMAND…
 *
 * @module
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import WebSocket from 'ws';
import { lineSplitter } from './floor-sessions.ts';

const [url, command, ...args] = process.argv.slice(2);
if (url === undefined || command === undefined) throw new Error(`Usage: floor-node-relay.js WS-URL SERVER COMMAND… (got ${process.argv.slice(2).join(' ')})`);

const servers = new Map<string, ChildProcessByStdio<Writable, Readable, null>>();
const socket = new WebSocket(url);

function start(session: string): ChildProcessByStdio<Writable, Readable, null> {
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdout.setEncoding('utf8').on('data', lineSplitter((line) => socket.send(`${session} ${line}`)));
  child.stdin.on('error', () => {});
  servers.set(session, child);
  return child;
}

socket.on('message', (data: Buffer) => {
  const text = data.toString();
  const cut = text.indexOf(' ');
  if (cut === -1) {
    servers.get(text)?.kill();
    servers.delete(text);
    return;
  }
  const session = text.slice(0, cut);
  (servers.get(session) ?? start(session)).stdin.write(text.slice(cut + 1) + '\n');
});
socket.on('close', () => {
  for (const child of servers.values()) child.kill();
  process.exit(0);
});
