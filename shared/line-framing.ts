/**
 * UTF-8 line framing over web streams: bytes → text (BOM dropped) → lines (LF or CRLF), each
 * line capped in length. Built on the streams every runtime ships, because `@std/streams`
 * cannot be installed here.
 *
 * @module
 */

export interface LineSplitterOptions {
  /** Longest line kept, in UTF-16 code units; the rest of a longer line is dropped. Default 64 KiB. */
  maxLineLength?: number;
  /** Told how many characters of a line were dropped, so callers can report it. */
  onOverflow?: (dropped: number) => void;
}

const DEFAULT_MAX_LINE = 64 * 1024;

/** Splits a text stream into lines; a final line without a newline is still emitted. */
export class LineSplitterStream extends TransformStream<string, string> {
  constructor(options: LineSplitterOptions = {}) {
    const max = options.maxLineLength ?? DEFAULT_MAX_LINE;
    let partial = '';
    let dropped = 0;
    const emit = (controller: TransformStreamDefaultController<string>, line: string) => {
      const text = line.endsWith('\r') ? line.slice(0, -1) : line;
      if (dropped > 0) options.onOverflow?.(dropped);
      dropped = 0;
      controller.enqueue(text);
    };
    super({
      transform(chunk, controller) {
        let start = 0;
        for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
          const piece = chunk.slice(start, nl);
          const room = max - partial.length;
          if (piece.length > room) dropped += piece.length - Math.max(room, 0);
          emit(controller, partial + piece.slice(0, Math.max(room, 0)));
          partial = '';
          start = nl + 1;
        }
        const rest = chunk.slice(start);
        const room = max - partial.length;
        if (rest.length > room) dropped += rest.length - Math.max(room, 0);
        partial += rest.slice(0, Math.max(room, 0));
      },
      flush(controller) {
        if (partial.length > 0 || dropped > 0) emit(controller, partial);
      },
    });
  }
}

/** Bytes → lines: UTF-8 decoding (a leading BOM is dropped, bad bytes become U+FFFD) then splitting. */
export function linesOf(bytes: ReadableStream<Uint8Array>, options: LineSplitterOptions = {}): ReadableStream<string> {
  return bytes
    .pipeThrough(new TextDecoderStream('utf-8') as unknown as TransformStream<Uint8Array, string>)
    .pipeThrough(new LineSplitterStream(options));
}
