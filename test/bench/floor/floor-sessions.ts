/**
 * The least a legacy Streamable HTTP gateway must do per message, with no runtime in it, shared by
 * the floor relays (`floor.ts` says what they are for): parse the POST body once (a gateway must
 * know whether it is a request and its id), write it as one line upstream, and answer the POST with
 * the upstream line whose id matches, as a JSON body, unchanged. `initialize` without a session id
 * opens a session (one upstream, one server process, like supergateway `--stateful` and
 * Switchyard); a DELETE closes it. No auth, no validation beyond that, no SSE, no logging.
 *
 * @module
 */

/** One session's way to its server: a line in, lines out (`onLine`). */
export interface Upstream {
  write(line: string): void;
  close(): void;
}

export type OpenUpstream = (sessionId: string, onLine: (line: string) => void) => Upstream;

export interface FloorAnswer {
  status: number;
  /** The JSON body, or '' for none. */
  body: string;
  /** Set on the answer to the `initialize` that opened a session. */
  sessionId?: string;
}

interface Session {
  upstream: Upstream;
  /** Requests in flight by JSON-RPC id, each waiting for its answer line. */
  pending: Map<unknown, (line: string) => void>;
}

const NO_SESSION: FloorAnswer = { status: 404, body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}' };

export class FloorSessions {
  readonly #sessions = new Map<string, Session>();
  readonly #open: OpenUpstream;
  #next = 0;

  constructor(open: OpenUpstream) {
    this.#open = open;
  }

  /** One POST: `sessionId` is the request's `Mcp-Session-Id` header, null when absent. */
  post(sessionId: string | null, body: string): FloorAnswer | Promise<FloorAnswer> {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    let session = sessionId === null ? undefined : this.#sessions.get(sessionId);
    let opened: string | undefined;
    if (session === undefined) {
      if (sessionId !== null || message.method !== 'initialize') return NO_SESSION;
      opened = `floor-${++this.#next}`;
      session = this.#start(opened);
    }
    const upstream = session.upstream;
    if (message.id === undefined) {
      upstream.write(body);
      return { status: 202, body: '' };
    }
    const pending = session.pending;
    return new Promise((resolve) => {
      pending.set(message.id, (line) => resolve(opened === undefined ? { status: 200, body: line } : { status: 200, body: line, sessionId: opened }));
      upstream.write(body);
    });
  }

  delete(sessionId: string | null): FloorAnswer {
    const session = sessionId === null ? undefined : this.#sessions.get(sessionId);
    if (session === undefined) return NO_SESSION;
    this.#sessions.delete(sessionId!);
    session.upstream.close();
    return { status: 200, body: '' };
  }

  closeAll(): void {
    for (const id of [...this.#sessions.keys()]) this.delete(id);
  }

  #start(id: string): Session {
    const pending = new Map<unknown, (line: string) => void>();
    const upstream = this.#open(id, (line) => {
      const message = JSON.parse(line) as { id?: unknown; method?: unknown };
      // Server requests carry ids too; only a response settles a POST.
      if (message.method !== undefined) return;
      const settle = pending.get(message.id);
      if (settle === undefined) return;
      pending.delete(message.id);
      settle(line);
    });
    const session = { upstream, pending };
    this.#sessions.set(id, session);
    return session;
  }
}

/** Splits a stream of text chunks into lines (without the newline), for `onLine`. */
export function lineSplitter(onLine: (line: string) => void): (chunk: string) => void {
  let partial = '';
  return (chunk) => {
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      const line = partial + chunk.slice(start, end);
      partial = '';
      start = end + 1;
      if (line.trim() !== '') onLine(line);
    }
    partial += chunk.slice(start);
  };
}
