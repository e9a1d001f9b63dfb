/**
 * ProcessExecutorBackedClientTransport: an MCP SDK `Transport` over a process the executor
 * started, which also owns that process (the upstream ProcessOwnedMcpTransport role).
 *
 * What it adds to the SDK's own stdio client: the launch goes through `ProcessExecutor`, so the
 * same code path serves contained and ordinary servers; stderr is drained apart into the log and a
 * bounded tail that explains a premature exit in this host's log, never in the error sent on; closing ends the whole process tree. Framing is the
 * SDK's (newline-delimited JSON, written here rather than with its `serializeMessage`, whose module
 * loads the SDK's `types.js` and every MCP zod schema with it); each stdout line is read by `readJsonRpcText`,
 * which refuses output nested deeper than `MAX_JSON_DEPTH` before anything recursive sees it: a
 * too-deep answer to request X becomes an `invalid-request` error for X (the caller is told,
 * instead of waiting for an answer the link could never carry), a too-deep server request is
 * answered with that error, and a too-deep notification is skipped and reported.
 *
 * Both pipes are bounded, so a server cannot make the sidecar hold more than a budget of its
 * traffic either way:
 * - stdout can be held (`holdReading`, `ReadHold` in `shared/link/link-flow.ts`): while the link
 *   holds too much of this server's output it stops reading, the pipe fills and the server waits
 *   in its own write. A server that has exited is read to the end whatever holds it: a pipe's worth
 *   at most, and its last answers are in it;
 * - stdin: a message is refused, with `limit-reached`, while more than `MAX_STDIN_QUEUED_BYTES` wait
 *   for a server that does not read them (the bridge answers a request with it), instead of
 *   queueing in the sidecar without end. One larger than that still goes when nothing waits.
 *
 * @module
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, LocalError, WireError } from '../../shared/errors.ts';
import { isLogWorthy } from '../../shared/log.ts';
import { MAX_JSON_DEPTH } from '../../shared/json-depth.ts';
import { readJsonRpcText } from '../../shared/json-rpc-text.ts';
import { linesOf } from '../../shared/line-framing.ts';
import type { Logger } from '../log.ts';
import type { ProcessExecutor, ProcessExit, ProcessHandle, ProcessLaunchRequest } from './process-executor.ts';
import { StderrTail, type StderrTailLimits } from './stderr-tail.ts';
import type { LargeLineGate, LineTicket } from './large-line-gate.ts';
import { StdoutLines } from './stdout-lines.ts';

/** How the transport logs, bounds its buffers and can be cancelled while starting. */
export interface ProcessTransportOptions {
  readonly logger: Logger;
  /** Size of the rolling stderr buffer; 64 lines / 8 KiB by default. */
  readonly stderrTail?: StderrTailLimits;
  /** Cancels `start()`; a process launched so far is disposed. Ignored once `start()` resolved. */
  readonly startSignal?: AbortSignal;
  /** Longest stdout line buffered while waiting for its newline; 16 MiB by default. */
  readonly maxMessageBytes?: number;
  /** Bound on waiting for the output pipes to drain after the process ended; 1 s by default. */
  readonly drainTimeoutMs?: number;
  /** How long a server whose stdout closed may run on before it is ended; `STDOUT_CLOSED_GRACE_MS` by default. */
  readonly stdoutClosedGraceMs?: number;
  /** Bytes waiting for stdin past which messages are refused; `MAX_STDIN_QUEUED_BYTES` by default. */
  readonly maxStdinQueuedBytes?: number;
  /** The host's gate on large stdout lines, and the agent this server runs for (its turn there); none: read at once. */
  readonly lineGate?: { readonly gate: LargeLineGate; readonly group: string };
}

type State = 'new' | 'starting' | 'open' | 'closing' | 'closed';

/** How long a server whose stdout closed has to exit on its own (its cleanup) before it is ended. */
const STDOUT_CLOSED_GRACE_MS = 5000;

/**
 * Bytes waiting for a server's stdin past which its messages are refused: far more than a server
 * that reads ever leaves there (the pipe itself takes 64 KiB), far less than what hurts the sidecar.
 */
export const MAX_STDIN_QUEUED_BYTES = 8 * 1024 * 1024;

/** A client transport whose server is a process launched, contained or not, by `ProcessExecutor`. */
export class ProcessExecutorBackedClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly name: string;
  readonly #request: ProcessLaunchRequest;
  readonly #executor: ProcessExecutor;
  readonly #options: ProcessTransportOptions;
  readonly #logger: Logger;
  readonly #tail: StderrTail;
  readonly #readBuffer: StdoutLines;
  readonly #launchAbort = new AbortController();
  #state: State = 'new';
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #handle: ProcessHandle | undefined;
  #stdoutDone: Promise<void> = Promise.resolve();
  #stderrDone: Promise<void> = Promise.resolve();
  #sawStdout = false;
  /** Holds on reading stdout not yet released (`holdReading`). */
  #holds = 0;
  /** The unfinished line's place at the line gate, while it is a large one. */
  #lineTicket: LineTicket | null = null;
  /** Messages refused for a full stdin, so the log tells of the 1st, 10th, 100th, … */
  #refused = 0;
  /** Its large lines found slow at the line gate, logged as `#refused` is. */
  #stalledLines = 0;

  constructor(name: string, launchRequest: ProcessLaunchRequest, executor: ProcessExecutor, options: ProcessTransportOptions) {
    this.name = name;
    this.#request = launchRequest;
    this.#executor = executor;
    this.#options = options;
    this.#logger = options.logger.child({ server: name });
    this.#tail = new StderrTail(options.stderrTail);
    this.#readBuffer = new StdoutLines(options.maxMessageBytes ?? 16 * 1024 * 1024);
  }

  /** Launches the server once; a second call rejects with LocalError `'already-started'`. */
  start(): Promise<void> {
    if (this.#state !== 'new') {
      return Promise.reject(new LocalError('already-started', `Cannot start transport for server "${this.name}": it was already started or closed`));
    }
    this.#state = 'starting';
    this.#starting = this.#launch();
    return this.#starting;
  }

  /**
   * Writes one message to the server's stdin, waiting for 'drain' when the pipe is full; refuses
   * it with `limit-reached` while more than the stdin budget waits there already. An answer to the
   * server's own request (sampling, elicitation, roots) and a cancellation may use as much again:
   * the server waits for the one and stops work for the other, and refusing them would leave it
   * waiting forever or working on.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#state === 'open' ? this.#handle?.stdin : undefined;
    if (!stdin || stdin.destroyed || stdin.writableEnded) {
      throw new LocalError('not-connected', `Cannot send to server "${this.name}": the transport is not open`);
    }
    const budget = this.#options.maxStdinQueuedBytes ?? MAX_STDIN_QUEUED_BYTES;
    const limit = !('method' in message) || message.method === 'notifications/cancelled' ? 2 * budget : budget;
    if (stdin.writableLength > limit) {
      if (isLogWorthy(++this.#refused)) this.#logger.warn('Server is not reading its stdin: messages refused', { queuedBytes: stdin.writableLength, limitBytes: limit, refused: this.#refused });
      throw new WireError('limit-reached', `Server "${this.name}" is not reading its input: ${stdin.writableLength} bytes wait for it already, over the ${limit} the host queues; retry once it has answered`, {
        detail: { server: this.name, limitBytes: limit },
      });
    }
    // The pipe takes nearly every message at once: only a full one costs a promise and listeners.
    if (!stdin.write(`${JSON.stringify(message)}\n`)) await drained(stdin, this.name);
  }

  /** Stops the protocol, ends the process tree, drains stderr, then calls `onclose` once. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown(undefined);
    return this.#closing;
  }

  /** Whether anything holds reading stdout now (`holdReading`): the line gate reads it as the link's hold while its line reads. */
  get readingHeld(): boolean {
    return this.#holds > 0;
  }

  /** The line gate found this server's large answer slow while another waited (`GatedReader.stalled`): it stopped, or crawls, mid-answer. */
  stalled(heldBytes: number, gaveUp: boolean): void {
    if (!isLogWorthy(++this.#stalledLines)) return;
    const fields = { heldBytes, times: this.#stalledLines };
    if (gaveUp) this.#logger.info('Server stalled in the middle of a large answer: another agent\'s answer is read in its place until it goes on', fields);
    else this.#logger.warn('Server stalled in the middle of a large answer and keeps its place: the answers stalled so already hold all the sidecar keeps of them', fields);
  }

  /**
   * Stops reading the server's stdout until the release (idempotent) is called, and every other
   * hold's too: the pipe fills and the server waits in its write (`ReadHold`).
   */
  holdReading(): () => void {
    if (this.#holds++ === 0 && this.#state === 'open') this.#handle?.stdout.pause();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0 && this.#state === 'open') this.#handle?.stdout.resume();
    };
  }

  /** The last stderr lines of the server, oldest first, bounded by the tail limits. */
  stderrTail(): string[] {
    return this.#tail.lines();
  }

  /** The pid of the launched process (the sandbox tool's, when contained); undefined before start. */
  get pid(): number | undefined {
    return this.#handle?.pid;
  }

  async #launch(): Promise<void> {
    const external = this.#options.startSignal;
    const signal = external ? AbortSignal.any([external, this.#launchAbort.signal]) : this.#launchAbort.signal;
    let handle: ProcessHandle;
    try {
      handle = await this.#executor.launch(this.#request, { signal });
    } catch (error) {
      if (this.#state === 'starting') this.#state = 'closed';
      throw error;
    }
    if (this.#state !== 'starting') {
      await handle.dispose(0);
      throw new LocalError('aborted', `Cannot start transport for server "${this.name}": it was closed while starting`);
    }
    this.#handle = handle;
    this.#state = 'open';
    handle.stdout.on('data', this.#onStdout);
    if (this.#holds > 0) handle.stdout.pause(); // held before it started
    this.#stdoutDone = new Promise((resolve) => handle.stdout.once('close', resolve));
    // A line cut off by its stdout's end is never whole: its place at the line gate goes on.
    void this.#stdoutDone.then(() => {
      this.#leaveLineGate();
      if (this.#state === 'open') this.#endIfStillRunning();
    });
    this.#stderrDone = this.#drainStderr(handle.stderr);
    void handle.exited.then((exit) => {
      // An exit the executor asked for (it ends every tree when the sidecar stops, whoever closes
      // first) is an orderly close, not a server that died: no error, no warning.
      if (this.#state === 'open') this.#closing ??= this.#shutdown(handle.ending ? undefined : exit);
    });
  }

  readonly #onStdout = (chunk: Buffer): void => {
    this.#sawStdout = true;
    try {
      this.#readBuffer.append(chunk);
    } catch (cause) {
      const limit = this.#options.maxMessageBytes ?? 16 * 1024 * 1024;
      // A WireError, so the agent's channel closes saying this rather than that the server went away.
      const tooLarge = new WireError('server-exited', `Server "${this.name}" wrote a line of more than ${limit} bytes to stdout, over the most one message may be: it was stopped`, {
        detail: { server: this.name, limitBytes: limit },
        cause,
      });
      this.#logger.warn('Server wrote an over-long line to stdout: stopped', { server: this.name, limitBytes: limit });
      this.#report(tooLarge);
      void this.close();
      return;
    }
    for (let line = this.#readBuffer.readLine(); line !== null; line = this.#readBuffer.readLine()) {
      const read = readJsonRpcText(line);
      let message: JSONRPCMessage;
      if (read.kind === 'message') message = read.message;
      else if (read.kind === 'too-deep') {
        this.#report(new LocalError('invalid-message', `Server "${this.name}" wrote a message nested deeper than ${MAX_JSON_DEPTH} levels: refused`));
        if (read.id === null) continue;
        const refusal = jsonRpcErrorBody(read.id, new WireError('invalid-request', `Server output nested deeper than ${MAX_JSON_DEPTH} levels`, { detail: { server: this.name } }));
        if (read.request) {
          this.send(refusal as JSONRPCMessage).catch(() => {});
          continue;
        }
        message = refusal as JSONRPCMessage;
      } else {
        const what = read.kind === 'not-json' ? 'it is not JSON' : 'it is not a JSON-RPC message';
        this.#report(new LocalError('invalid-message', `Server "${this.name}" wrote a line to stdout that was skipped: ${what}`));
        continue;
      }
      try {
        this.onmessage?.(message);
      } catch (error) {
        this.#report(error instanceof Error ? error : new Error(String(error)));
      }
    }
    this.#gateLine(chunk.length);
  };

  /**
   * A large unfinished line takes its place at the host's line gate (`large-line-gate.ts`), which
   * holds this stdout until its turn; once it is whole (and sent on, above), the place goes to the next.
   */
  #gateLine(bytesRead: number): void {
    const lineGate = this.#options.lineGate;
    if (lineGate === undefined || this.#state !== 'open') return;
    const large = this.#readBuffer.pendingBytes >= lineGate.gate.lineBytes;
    if (large && this.#lineTicket === null) this.#lineTicket = lineGate.gate.enter(this, lineGate.group);
    else if (large) this.#lineTicket!.read(bytesRead);
    else if (this.#lineTicket !== null) this.#leaveLineGate();
  }

  #leaveLineGate(): void {
    const ticket = this.#lineTicket;
    this.#lineTicket = null;
    ticket?.leave();
  }

  async #drainStderr(stderr: Readable): Promise<void> {
    const reader = linesOf(pullStream(stderr), { maxLineLength: this.#tail.maxLineLength }).getReader();
    try {
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        this.#tail.push(next.value);
        this.#logger.debug('Server stderr', { line: next.value });
      }
    } catch (error) {
      this.#logger.debug('Server stderr ended with an error', { error });
    }
  }

  /** The one way out: `exit` is set when the process ended before `close()` was called. */
  async #shutdown(exit: ProcessExit | undefined): Promise<void> {
    const prior = this.#state;
    this.#state = 'closing';
    // Whatever is still read goes at once (or is discarded): the next server's large line reads.
    this.#leaveLineGate();
    if (prior === 'starting') {
      this.#launchAbort.abort();
      await this.#starting?.catch(() => {});
    }
    const handle = this.#handle;
    if (exit === undefined) handle?.stdout.off('data', this.#onStdout).resume(); // closing: stop the protocol, discard the rest
    else handle?.stdout.resume(); // exited: what it wrote last is read whatever holds it
    if (handle) {
      await handle.dispose();
      const drainMs = this.#options.drainTimeoutMs ?? 1000;
      await settleWithin(Promise.all([this.#stdoutDone, this.#stderrDone]), drainMs);
      handle.stdout.off('data', this.#onStdout);
      handle.stdout.destroy();
      handle.stderr.destroy();
    }
    this.#readBuffer.clear();
    if (exit !== undefined) this.#report(this.#exitError(exit));
    this.#state = 'closed';
    this.onclose?.();
  }

  /**
   * The stderr tail stays in this host's log: the error crosses the link to the worker, its agents
   * and /healthz, and a server's stderr may print its environment or the files it read.
   */
  #exitError(exit: ProcessExit): WireError {
    this.#logger.warn('Server exited', { exitCode: exit.code, signal: exit.signal, stderr: this.#tail.sanitized() });
    const { policy } = this.#request;
    if (policy !== null && !this.#sawStdout) {
      const failure = policy.classifyFailure(this.#tail.lines().join('\n'), exit);
      if (failure) return failure;
    }
    const how = exit.signal === null ? `with code ${exit.code}` : `on signal ${exit.signal}`;
    return new WireError('server-exited', `Server "${this.name}" exited ${how}: see the sidecar log`, { detail: { server: this.name, exitCode: exit.code, signal: exit.signal } });
  }

  /**
   * Its stdout closed, so the server can answer nothing more; one that exits now is reported by
   * its exit. One that keeps running (it closed its stdout, or handed it to a child that ended)
   * would leave every request waiting and its process held busy: it is ended after a grace.
   */
  #endIfStillRunning(): void {
    const timer = setTimeout(() => {
      // Closed, exited, or being ended by the executor (the sidecar stops): nothing to say.
      if (this.#state !== 'open' || this.#handle?.ending === true) return;
      this.#logger.warn('Server closed its stdout but kept running: ended it', { stderr: this.#tail.sanitized() });
      this.#report(new WireError('server-exited', `Server "${this.name}" closed its output and can answer nothing more: it was ended, see the sidecar log`, { detail: { server: this.name } }));
      this.#closing ??= this.#shutdown(undefined);
    }, this.#options.stdoutClosedGraceMs ?? STDOUT_CLOSED_GRACE_MS);
    (timer as { unref?: () => void }).unref?.();
  }

  #report(error: Error): void {
    this.#logger.debug('Transport error', { error });
    this.onerror?.(error);
  }
}

/** Adapts a Node stream to a web stream that reads only when pulled, so backpressure holds. */
function pullStream(readable: Readable): ReadableStream<Uint8Array> {
  const chunks = readable[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.byteLength));
      },
      async cancel() {
        await chunks.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/** Settles when a stream that refused a write drains (resolves) or closes first (rejects). */
function drained(stream: Writable, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: unknown) => {
      stream.off('drain', onDrain).off('close', onClose).off('error', onClose);
      if (error === undefined) resolve();
      else reject(new LocalError('not-connected', `Cannot send to server "${name}": its stdin closed`, { cause: error }));
    };
    const onDrain = () => done();
    const onClose = (error?: unknown) => done(error ?? new Error('stdin closed'));
    stream.once('drain', onDrain).once('close', onClose).once('error', onClose);
  });
}

async function settleWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
