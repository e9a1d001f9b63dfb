/**
 * One HTTP/1.1 GET over a connection the caller opened: how the worker reads a Client ID Metadata
 * Document from the very address it checked. `fetch` resolves the name again when it connects,
 * and a DNS server that answers a public address to the check and a private one to `fetch`
 * (rebinding) would reach what the check refused; so the runtime (Deno, Node) connects to a
 * checked address itself, TLS checked against the URL's host, and this file speaks HTTP on it.
 *
 * Only what a JSON document needs: GET, `Connection: close`, no compression; a body framed by
 * `Transfer-Encoding: chunked`, `Content-Length` or the connection's close, given as a stream so
 * the caller's size cap stops the reading (and closes the connection) at its limit.
 *
 * @module
 */

/** A connection's two byte streams (a TLS connection's plain text), and how to end it. */
export interface ByteConnection {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): void;
}

/** Opens a TLS connection to `address` (an IP literal), checking the peer's certificate against `serverName`. */
export type ConnectTls = (options: { address: string; port: number; serverName: string; signal: AbortSignal }) => Promise<ByteConnection>;

/** Why a connection could not be opened: the TCP connect or the TLS handshake, named for the sign-in page (no local address, no resolver dump). */
export class ConnectError extends Error {
  readonly stage: 'connect' | 'tls';

  constructor(stage: 'connect' | 'tls', detail: string) {
    super(detail);
    this.name = 'ConnectError';
    this.stage = stage;
  }
}

/** The most bytes of a response's status line and headers, and of one chunk-size line or trailer. */
export const MAX_HEAD_BYTES = 8 * 1024;
/**
 * The most bytes of everything but the body's own: every head (interim ones too), chunk-size line
 * and trailer. The caller caps the body; without this, a server could send framing without end.
 */
export const MAX_FRAMING_BYTES = 16 * 1024;

/** Interim (1xx) answers taken before the final one. */
const MAX_INTERIM_RESPONSES = 4;

/** Why a response could not be read as HTTP/1.1; `fetch` would throw a `TypeError` there too. */
export class MalformedResponseError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedResponseError';
  }
}

const encoder = new TextEncoder();
const CRLF = [13, 10];
/** Statuses whose response has no body (RFC 9110 §15.3.5, §15.3.6, §15.4.5). */
const NO_BODY = new Set([204, 205, 304]);

/** Bytes as ISO-8859-1, one character each (a `TextDecoder('latin1')` is windows-1252, which maps 0x80–0x9f elsewhere). */
export function latin1(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return text;
}

/**
 * Sends `GET url` on `connection` and answers its response; the body streams from the connection,
 * which is closed at the body's end, on its cancel, on `signal` and on any error.
 */
export async function fetchOverConnection(connection: ByteConnection, url: URL, options: { headers?: Record<string, string>; signal: AbortSignal }): Promise<Response> {
  const input = new BufferedReader(connection.readable.getReader());
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    options.signal.removeEventListener('abort', close);
    input.release();
    try {
      connection.close();
    } catch {
      // Already closed by its peer: nothing is left to end.
    }
  };
  options.signal.addEventListener('abort', close);
  try {
    if (options.signal.aborted) throw options.signal.reason;
    const writer = connection.writable.getWriter();
    await writer.write(encoder.encode(requestHead(url, options.headers ?? {})));
    writer.releaseLock();
    let head = await readHead(input);
    // Interim answers (103 Early Hints) precede the one that counts; a few, not a stream of them.
    for (let interim = 1; head.status < 200; interim++) {
      if (interim > MAX_INTERIM_RESPONSES) throw new MalformedResponseError(`the response began with more than ${MAX_INTERIM_RESPONSES} interim answers`);
      head = await readHead(input);
    }
    if (!NO_BODY.has(head.status)) return new Response(bodyStream(input, head.headers, close), { status: head.status, headers: head.headers });
    close();
    return new Response(null, { status: head.status, headers: head.headers });
  } catch (error) {
    close();
    throw options.signal.aborted ? options.signal.reason : error;
  }
}

function requestHead(url: URL, headers: Record<string, string>): string {
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close', 'Accept-Encoding: identity'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/** A response's status and headers, read up to the empty line that ends them. */
async function readHead(input: BufferedReader): Promise<{ status: number; headers: Headers }> {
  const text = latin1(await input.readUntil([13, 10, 13, 10], MAX_HEAD_BYTES, 'the response head'));
  const [statusLine = '', ...fields] = text.split('\r\n');
  const status = /^HTTP\/1\.[01] ([1-5]\d\d)(?: |$)/.exec(statusLine);
  if (status === null) throw new MalformedResponseError(`the response does not start with an HTTP/1.1 status line: "${statusLine.slice(0, 40)}"`);
  const headers = new Headers();
  for (const field of fields) {
    const colon = field.indexOf(':');
    const name = field.slice(0, colon);
    if (colon <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new MalformedResponseError(`the response has a malformed header line: "${field.slice(0, 40)}"`);
    try {
      headers.append(name, field.slice(colon + 1).trim());
    } catch {
      throw new MalformedResponseError(`the response's header "${name}" has an invalid value`);
    }
  }
  return { status: Number(status[1]), headers };
}

/** The body as its framing says: chunked, a length, or up to the connection's close. */
function bodyStream(input: BufferedReader, headers: Headers, close: () => void): ReadableStream<Uint8Array> {
  const coding = headers.get('transfer-encoding');
  const length = headers.get('content-length');
  let next: () => Promise<Uint8Array | null>;
  if (coding !== null) {
    if (coding.toLowerCase() !== 'chunked') throw new MalformedResponseError(`the response's transfer coding "${coding.slice(0, 40)}" is not chunked`);
    next = chunkedBody(input);
  } else if (length !== null) {
    if (!/^\d{1,15}$/.test(length)) throw new MalformedResponseError(`the response's Content-Length "${length.slice(0, 40)}" is not one number`);
    let left = Number(length);
    next = async () => {
      if (left === 0) return null;
      const bytes = await input.readSome(left);
      if (bytes === null) throw new MalformedResponseError('the connection closed before the body\'s end');
      left -= bytes.byteLength;
      return bytes;
    };
  } else {
    next = () => input.readSome(Infinity);
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const bytes = await next();
        if (bytes !== null) return controller.enqueue(bytes);
        close();
        controller.close();
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    cancel: close,
  });
}

/** Reads a chunked body piece by piece (RFC 9112 §7.1); trailers are read and dropped. */
function chunkedBody(input: BufferedReader): () => Promise<Uint8Array | null> {
  let left = 0;
  let ended = false;
  return async () => {
    if (ended) return null;
    if (left === 0) {
      const line = latin1(await input.readUntil(CRLF, MAX_HEAD_BYTES, 'a chunk size line'));
      const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(line);
      if (size === null) throw new MalformedResponseError(`the response has a malformed chunk size line: "${line.slice(0, 40)}"`);
      left = parseInt(size[1]!, 16);
      if (left === 0) {
        // Trailer fields, then the empty line that ends the message.
        while ((await input.readUntil(CRLF, MAX_HEAD_BYTES, 'a trailer')).byteLength > 0);
        ended = true;
        return null;
      }
    }
    const bytes = await input.readSome(left);
    if (bytes === null) throw new MalformedResponseError('the connection closed inside a chunk');
    left -= bytes.byteLength;
    if (left === 0 && !(await input.skip(CRLF))) throw new MalformedResponseError('a chunk does not end where its size says');
    return bytes;
  };
}

/**
 * Bytes read from a stream ahead of their use, so a head and a body can be told apart in one chunk;
 * what `readUntil` takes counts against {@link MAX_FRAMING_BYTES}.
 */
class BufferedReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buffer = new Uint8Array(0);
  #done = false;
  #released = false;
  #framing = 0;

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>) {
    this.#reader = reader;
  }

  /** The bytes before the next `delimiter` (which is consumed); an error past `limit` bytes or at the end. */
  async readUntil(delimiter: readonly number[], limit: number, what: string): Promise<Uint8Array> {
    let searched = 0;
    for (;;) {
      const at = indexOf(this.#buffer, delimiter, searched);
      // Not found yet, the buffer may end in part of the delimiter.
      if (at > limit || (at < 0 && this.#buffer.byteLength >= limit + delimiter.length)) throw new MalformedResponseError(`${what} is longer than ${limit} bytes`);
      if (at >= 0) {
        this.#countFraming(at + delimiter.length);
        const bytes = this.#buffer.subarray(0, at);
        this.#buffer = this.#buffer.subarray(at + delimiter.length);
        return bytes;
      }
      searched = Math.max(0, this.#buffer.byteLength - delimiter.length + 1);
      if (!(await this.#fill())) throw new MalformedResponseError(`the connection closed inside ${what}`);
    }
  }

  /** Whether the next bytes are `expected` (then taken; counted as framing), false when they differ or the stream ends first. */
  async skip(expected: readonly number[]): Promise<boolean> {
    while (this.#buffer.byteLength < expected.length) if (!(await this.#fill())) return false;
    if (expected.some((byte, i) => this.#buffer[i] !== byte)) return false;
    this.#buffer = this.#buffer.subarray(expected.length);
    this.#countFraming(expected.length);
    return true;
  }

  /** Up to `most` bytes, as soon as there are any; null at the stream's end. */
  async readSome(most: number): Promise<Uint8Array | null> {
    if (this.#buffer.byteLength === 0 && !(await this.#fill())) return null;
    const bytes = this.#buffer.subarray(0, Math.min(most, this.#buffer.byteLength));
    this.#buffer = this.#buffer.subarray(bytes.byteLength);
    return bytes;
  }

  /** Gives the stream up: a read pending on it ends, and this and every later read fail (not a body's end). */
  release(): void {
    this.#released = true;
    this.#reader.cancel().catch(() => {});
  }

  #countFraming(bytes: number): void {
    this.#framing += bytes;
    if (this.#framing > MAX_FRAMING_BYTES) throw new MalformedResponseError(`the response's heads, chunk sizes and trailers pass ${MAX_FRAMING_BYTES} bytes`);
  }

  async #fill(): Promise<boolean> {
    if (this.#released) throw new MalformedResponseError('the connection was closed before the response ended');
    if (this.#done) return false;
    const { done, value } = await this.#reader.read();
    if (this.#released) throw new MalformedResponseError('the connection was closed before the response ended');
    if (done) {
      this.#done = true;
      return false;
    }
    const joined = new Uint8Array(this.#buffer.byteLength + value.byteLength);
    joined.set(this.#buffer);
    joined.set(value, this.#buffer.byteLength);
    this.#buffer = joined;
    return true;
  }
}

function indexOf(bytes: Uint8Array, needle: readonly number[], from: number): number {
  outer: for (let i = from; i <= bytes.byteLength - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
