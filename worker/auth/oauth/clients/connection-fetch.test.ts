import { describe, expect, it } from 'vitest';
import { fetchOverConnection, MAX_FRAMING_BYTES, MAX_HEAD_BYTES, type ByteConnection } from './connection-fetch.ts';

const URL_ = new URL('https://client.example.com:8443/apps/doc.json?v=2');

/** A connection whose peer answers `chunks` (split as given, to cross every boundary) and then closes, or stays open. */
function connection(chunks: readonly string[], options: { open?: boolean } = {}): ByteConnection & { sent(): string; closed(): boolean; blocked: Promise<void> } {
  const encoder = new TextEncoder();
  let sent = '';
  let closed = false;
  let pending: ((chunk: ReadableStreamReadResult<Uint8Array>) => void) | null = null;
  let block!: () => void;
  const blocked = new Promise<void>((resolve) => (block = resolve));
  const queue = [...chunks];
  const readable = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = queue.shift();
      if (next !== undefined) return controller.enqueue(encoder.encode(next));
      if (!options.open) return controller.close();
      // Held open until the connection is closed, as a silent peer would.
      block();
      return new Promise<void>((resolve) => {
        pending = () => resolve();
      });
    },
    // Pulled only when read, as a socket is: `blocked` then means a read waits on the peer.
  }, { highWaterMark: 0 });
  const writable = new WritableStream<Uint8Array>({ write: (bytes) => void (sent += new TextDecoder().decode(bytes)) });
  return {
    readable,
    writable,
    close: () => {
      closed = true;
      pending?.({ done: true, value: undefined });
    },
    sent: () => sent,
    closed: () => closed,
    /** Resolves once a read waits on the peer, which sends nothing more. */
    blocked,
  };
}

const get = (conn: ByteConnection, signal = new AbortController().signal) => fetchOverConnection(conn, URL_, { headers: { accept: 'application/json' }, signal });

describe('an HTTP/1.1 GET over a connection', () => {
  it('sends the path, the host with its port, Connection: close and no compression', async () => {
    const conn = connection(['HTTP/1.1 204 No Content\r\n\r\n']);
    await get(conn);
    expect(conn.sent()).toBe('GET /apps/doc.json?v=2 HTTP/1.1\r\nHost: client.example.com:8443\r\nConnection: close\r\nAccept-Encoding: identity\r\naccept: application/json\r\n\r\n');
  });

  it('reads a body framed by Content-Length, split anywhere, and closes the connection at its end', async () => {
    const whole = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nCache-Control: max-age=60\r\n\r\n{"a":"bcd"}';
    for (let at = 1; at < whole.length; at += 7) {
      const conn = connection([whole.slice(0, at), whole.slice(at)], { open: true });
      const response = await get(conn);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('max-age=60');
      expect(await response.text()).toBe('{"a":"bcd"}');
      expect(conn.closed()).toBe(true);
    }
  });

  it('takes a head of exactly its limit, whether its end comes in the same read or the next', async () => {
    const head = `HTTP/1.1 204 X\r\nX: ${'p'.repeat(MAX_HEAD_BYTES - 19)}`;
    expect(head.length).toBe(MAX_HEAD_BYTES);
    expect((await get(connection([head + '\r\n\r\n']))).status).toBe(204);
    expect((await get(connection([head + '\r\n\r', '\n']))).status).toBe(204);
  });

  it('reads a chunked body, with extensions and trailers, split anywhere', async () => {
    const whole = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\n{"a":\r\nA\r\n"bcdefghi"\r\n1\r\n}\r\n0\r\nX-Trailer: 1\r\n\r\n';
    for (let at = 1; at < whole.length; at += 3) {
      const response = await get(connection([whole.slice(0, at), whole.slice(at)], { open: true }));
      expect(await response.text()).toBe('{"a":"bcdefghi"}');
    }
  });

  it('reads a body up to the connection\'s close when nothing frames it', async () => {
    const response = await get(connection(['HTTP/1.0 200 OK\r\n\r\n{"a"', ':1}']));
    expect(await response.text()).toBe('{"a":1}');
  });

  it('closes the connection at once for a status that has no body', async () => {
    for (const status of [204, 205, 304]) {
      const conn = connection([`HTTP/1.1 ${status} X\r\n\r\n`], { open: true });
      const response = await get(conn);
      expect(response.status).toBe(status);
      expect(response.body).toBeNull();
      expect(conn.closed()).toBe(true);
    }
  });

  it('reads header values byte for byte (ISO-8859-1, not windows-1252)', async () => {
    const conn = connection([], { open: true });
    const bytes = new Uint8Array([...new TextEncoder().encode('HTTP/1.1 204 X\r\nX-Byte: '), 0x80, 0xe9, 13, 10, 13, 10]);
    // Raw bytes, not UTF-8 text. Node's TextDecoder('latin1') happens to be ISO-8859-1; Deno's is windows-1252 (0x80 → €), as the Encoding standard says.
    const raw: ByteConnection = { ...conn, readable: new ReadableStream({ start: (c) => c.enqueue(bytes) }) };
    expect((await get(raw)).headers.get('x-byte')).toBe('\u0080\u00e9');
  });

  it('skips an interim 103 answer', async () => {
    const response = await get(connection(['HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n']));
    expect(response.status).toBe(404);
  });

  it('stops reading where the caller stops: a cancelled body closes the connection', async () => {
    const conn = connection(['HTTP/1.1 200 OK\r\n\r\n', 'x'.repeat(100)], { open: true });
    const response = await get(conn);
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(conn.closed()).toBe(true);
  });

  it('errors a body that has no framing when its signal ends it, rather than taking what came as the whole', async () => {
    const conn = connection(['HTTP/1.1 200 OK\r\n\r\n{"a":1}'], { open: true });
    const controller = new AbortController();
    const response = await get(conn, controller.signal);
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('{"a":1}');
    // A read waiting on the network when the deadline comes, and one begun after it.
    const waiting = reader.read();
    await conn.blocked;
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('the connection was closed before the response ended');
    await expect(reader.read()).rejects.toThrow('the connection was closed before the response ended');
    expect(conn.closed()).toBe(true);
  });

  it('bounds what is not body: every head, chunk-size line and trailer count together', async () => {
    const trailers = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n' + 'X-T: 1234567890\r\n'.repeat(2000) + '\r\n';
    await expect((await get(connection([trailers]))).text()).rejects.toThrow(`the response's heads, chunk sizes and trailers pass ${MAX_FRAMING_BYTES} bytes`);
    const extensions = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' + `1;${'e'.repeat(4000)}\r\nx\r\n`.repeat(5) + '0\r\n\r\n';
    await expect((await get(connection([extensions]))).text()).rejects.toThrow(`the response's heads, chunk sizes and trailers pass ${MAX_FRAMING_BYTES} bytes`);
  });

  it('ends on its signal, with the signal\'s reason, and closes the connection', async () => {
    const conn = connection([], { open: true });
    const controller = new AbortController();
    const answer = get(conn, controller.signal);
    controller.abort(new Error('deadline'));
    await expect(answer).rejects.toThrow('deadline');
    expect(conn.closed()).toBe(true);
  });

  it('refuses what is not HTTP/1.1, naming what was wrong, and closes the connection', async () => {
    const cases: Array<[string[], string]> = [
      [['SSH-2.0-OpenSSH_9.6\r\n\r\n'], 'the response does not start with an HTTP/1.1 status line: "SSH-2.0-OpenSSH_9.6"'],
      [['HTTP/1.1 200 OK\r\nno colon here\r\n\r\n'], 'the response has a malformed header line: "no colon here"'],
      [['HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n'], 'the response\'s Content-Length "5, 6" is not one number'],
      [['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'], 'the response\'s transfer coding "gzip, chunked" is not chunked'],
      [['HTTP/1.1 200 OK\r\nX-Pad: ' + 'p'.repeat(MAX_HEAD_BYTES)], `the response head is longer than ${MAX_HEAD_BYTES} bytes`],
      [['HTTP/1.1 200 OK\r\nX-Pad: ' + 'p'.repeat(MAX_HEAD_BYTES) + '\r\n\r\n'], `the response head is longer than ${MAX_HEAD_BYTES} bytes`],
      // Past the limit by one byte, whether the head's end comes in the same read or the next.
      [[`HTTP/1.1 200 OK\r\nX: ${'p'.repeat(MAX_HEAD_BYTES - 19)}`, '\r\n\r\n'], `the response head is longer than ${MAX_HEAD_BYTES} bytes`],
      [[`HTTP/1.1 200 OK\r\nX: ${'p'.repeat(MAX_HEAD_BYTES - 19)}\r\n\r\n`], `the response head is longer than ${MAX_HEAD_BYTES} bytes`],
      [['HTTP/1.1 200 OK\r\n'], 'the connection closed inside the response head'],
      [['HTTP/1.1 103 Early Hints\r\n\r\n'.repeat(5) + 'HTTP/1.1 200 OK\r\n\r\n'], 'the response began with more than 4 interim answers'],
    ];
    for (const [chunks, message] of cases) {
      const conn = connection(chunks);
      await expect(get(conn)).rejects.toThrow(message);
      expect(conn.closed()).toBe(true);
    }
  });

  it('errors a body cut short or framed wrong, rather than handing on part of it', async () => {
    const cases: Array<[string, string]> = [
      ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"a":', 'the connection closed before the body\'s end'],
      ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 'the response has a malformed chunk size line: "zz"'],
      ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n', 'a chunk does not end where its size says'],
      ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab', 'the connection closed inside a chunk'],
    ];
    for (const [text, message] of cases) {
      const response = await get(connection([text]));
      await expect(response.text()).rejects.toThrow(message);
    }
  });
});
