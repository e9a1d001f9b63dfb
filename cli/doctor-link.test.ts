import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHostKey } from '../sidecar/link/host-key.ts';
import { probeLink } from './doctor-link.ts';

let server: Server | undefined;
let dir: string | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Something at the worker's URL that answers `/link` with `answer`. */
async function workerUrl(answer: (res: import('node:http').ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function key() {
  dir = mkdtempSync(join(tmpdir(), 'doctor-link-'));
  return createHostKey(join(dir, 'host.key'));
}

describe('probeLink', () => {
  it('ends against an answer that streams for ever, instead of waiting for its end (review s22: doctor hung)', async () => {
    const url = await workerUrl((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const tick = setInterval(() => res.write(': keepalive\n\n'), 20);
      res.on('close', () => clearInterval(tick));
    });
    const probe = await probeLink({ worker: url, entityId: 'laptop', key: await key(), timeoutMs: 200 });
    expect(probe).toMatchObject({ ok: false, problem: 'unreachable', message: 'the worker did not finish the link handshake within 400 ms' });
  });

  it('reads no more than 4 KiB of an answer that is not the worker\'s', async () => {
    const url = await workerUrl((res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.write('<html>'.padEnd(64 * 1024, 'x'));
      // and never ends
    });
    const probe = await probeLink({ worker: url, entityId: 'laptop', key: await key(), timeoutMs: 60_000 });
    expect(probe).toMatchObject({ ok: false, problem: 'refused', message: 'the worker answered HTTP 502 instead of a WebSocket upgrade' });
  });
});
