/**
 * A gate that a reader of an HTTP server's answers waits at before each read while someone holds
 * it: what holds back an HTTP server on the host (`ReadHold`, `link/link-flow.ts`), as a full pipe
 * holds back a stdio server. A fetch body left unread keeps its bytes in the socket, whose TCP
 * window then stops the server's writes; before, a host read an HTTP server's answers as fast as
 * they came, whatever the link could take, and only counted them.
 *
 * @module
 */
export class ReadGate {
  #holds = 0;
  #opened: Promise<void> | undefined;
  #open: (() => void) | undefined;
  #disposed = false;

  /** Undefined while open; while held, settles when the last hold is released (or the gate disposed). */
  get closed(): Promise<void> | undefined {
    return this.#opened;
  }

  /** Holds the gate until the release (idempotent) is called, and every other hold's too. */
  hold(): () => void {
    if (this.#disposed) return () => {};
    if (this.#holds++ === 0) this.#opened = new Promise((resolve) => (this.#open = resolve));
    let released = false;
    return () => {
      if (released || this.#disposed) return;
      released = true;
      if (--this.#holds === 0) this.#openNow();
    };
  }

  /** Opens for good: its reader is closing, and must not wait for a release that may never come. */
  dispose(): void {
    this.#disposed = true;
    this.#holds = 0;
    this.#openNow();
  }

  #openNow(): void {
    const open = this.#open;
    this.#opened = this.#open = undefined;
    open?.();
  }
}

/**
 * A gate for a reader that may be dropped while another reads on: held whenever `gate` is, and
 * disposing it opens it for that reader alone. A dual-era client tries a legacy session beside its
 * modern reader, both behind one gate, and a refused session's close must not open the gate the
 * modern reader goes on waiting at (`era-bridge/dual-era-http-transport.ts`).
 */
export class BorrowedReadGate extends ReadGate {
  readonly #lender: ReadGate;
  #returned = false;

  constructor(lender: ReadGate) {
    super();
    this.#lender = lender;
  }

  override get closed(): Promise<void> | undefined {
    return this.#returned ? undefined : this.#lender.closed;
  }

  override hold(): () => void {
    return this.#returned ? () => {} : this.#lender.hold();
  }

  override dispose(): void {
    this.#returned = true;
  }
}

/** Waits while `gate` is held, or until `signal` aborts. */
export async function passGate(gate: ReadGate | undefined, signal: AbortSignal | undefined): Promise<void> {
  const closed = gate?.closed;
  if (closed === undefined) return;
  if (signal === undefined) return closed;
  if (signal.aborted) return;
  let onAbort!: () => void;
  const aborted = new Promise<void>((resolve) => (onAbort = resolve));
  signal.addEventListener('abort', onAbort);
  try {
    await Promise.race([closed, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
