import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { coalescedSend } from './coalesced-send.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A ws client linked to an in-process ws server, and the texts the server receives. */
async function linked(): Promise<{ ws: WebSocket; received: string[]; next(count: number): Promise<void> }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const received: string[] = [];
  let waiter: (() => void) | null = null;
  server.on('connection', (peer) => peer.on('message', (data) => (received.push(data.toString()), waiter?.())));
  const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await new Promise((resolve) => ws.once('open', resolve));
  cleanups.push(() => (ws.terminate(), server.close()));
  const next = (count: number) =>
    new Promise<void>((resolve) => {
      waiter = () => received.length >= count && resolve();
      waiter();
    });
  return { ws, received, next };
}

describe('coalescedSend', () => {
  it('holds the frames of one turn in the socket and writes them together when the turn ends, in order', async () => {
    const { ws, received, next } = await linked();
    const send = coalescedSend(ws);
    const socket = (ws as unknown as { _socket: { writableCorked: number } })._socket;
    send('first');
    send('second');
    expect(socket.writableCorked).toBe(1);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(socket.writableCorked).toBe(0);
    send('third');
    await next(3);
    expect(received).toEqual(['first', 'second', 'third']);
  });

  it('reports each frame once it is written, after the turn that sent it', async () => {
    const { ws } = await linked();
    const reports: number[] = [];
    let sent = 0;
    const send = coalescedSend(ws, () => reports.push(reports.length + 1));
    for (; sent < 3; sent++) send(`frame ${sent}`);
    expect(reports).toEqual([]); // corked: nothing written before the turn ends
    await new Promise<void>((resolve) => {
      const check = () => (reports.length === sent ? resolve() : setImmediate(check));
      check();
    });
    expect(reports).toEqual([1, 2, 3]);
  });
});
