/**
 * A server's stdout split into lines (LF or CRLF), as the SDK's `ReadBuffer` does, with a cap on
 * the unfinished line.
 *
 * Linear in what it reads: a pipe hands a large line over in 64 KiB chunks, and the first version
 * joined the held bytes with each new chunk and searched them again from the start, so a 1 MiB
 * line cost 16 growing copies and scans (8.5 MiB of memmove, fresh pages for each copy): most of
 * the sidecar's 18.5 ms of CPU per 1 MiB echo (issue 17). Chunks without a newline are now only
 * kept, each searched once, and joined once, when the newline that ends their line arrives.
 *
 * @module
 */
export class StdoutLines {
  /** Chunks of the unfinished line, already searched: none holds a newline. */
  #parts: Buffer[] = [];
  #partBytes = 0;
  /** Bytes not searched yet: the rest of the latest chunk after the lines already read from it. */
  #unread: Buffer | undefined;

  constructor(readonly maxBytes: number) {}

  /** @throws Error when the unfinished line would pass `maxBytes` (everything held is dropped). */
  append(chunk: Buffer): void {
    if (this.#partBytes + (this.#unread?.length ?? 0) + chunk.length > this.maxBytes) {
      this.clear();
      throw new Error(`Line buffer exceeded maximum size of ${this.maxBytes} bytes`);
    }
    // A caller reads every line after each append, so nothing is unread here but in a caller that
    // did not: keep the order, at the cost of a copy.
    this.#unread = this.#unread === undefined ? chunk : Buffer.concat([this.#unread, chunk]);
  }

  /** The next whole line (without its LF or CRLF), or null until one has arrived. */
  readLine(): string | null {
    const unread = this.#unread;
    if (unread === undefined) return null;
    const newline = unread.indexOf(0x0a);
    if (newline === -1) {
      this.#parts.push(unread);
      this.#partBytes += unread.length;
      this.#unread = undefined;
      return null;
    }
    let line = unread.subarray(0, newline);
    if (this.#parts.length > 0) {
      line = Buffer.concat([...this.#parts, line], this.#partBytes + newline);
      this.#parts = [];
      this.#partBytes = 0;
    }
    this.#unread = newline + 1 < unread.length ? unread.subarray(newline + 1) : undefined;
    // CRLF: a CR is only ever that byte in UTF-8; it may have come in the chunk before the LF.
    const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
    return line.toString('utf8', 0, end);
  }

  /** Bytes of the unfinished line held (once every whole line was read). */
  get pendingBytes(): number {
    return this.#partBytes + (this.#unread?.length ?? 0);
  }

  clear(): void {
    this.#parts = [];
    this.#partBytes = 0;
    this.#unread = undefined;
  }
}
