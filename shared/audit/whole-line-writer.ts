/**
 * Appends audit lines to a file so that each line stays a line of its own. A write may take part
 * of a line (a full disk takes what fits, then refuses the rest): the rest is written in a loop,
 * and when a write fails part way, the part written is cut off the file again (`dropTail`), so
 * the file holds whole lines only, each one a record a reader can parse. Where it cannot be cut
 * (no `dropTail`, or it fails: a device, not a file), the next line starts on a new line, so the
 * cut line is the only one lost, never merged with the next agent's record.
 *
 * The audit file has one writer (its sidecar or worker): cutting by size would cut another
 * writer's bytes appended meanwhile.
 *
 * @module
 */

/**
 * `writeSync(bytes)` writes some of `bytes` and says how many, or throws; `dropTail(n)` cuts the
 * file's last `n` bytes off, or throws.
 */
export function wholeLineWriter(writeSync: (bytes: Uint8Array) => number, dropTail?: (bytes: number) => void): (line: string) => void {
  // The file does not end with a newline: the last write failed part way.
  let cut = false;
  return (line) => {
    const prefix = cut ? 1 : 0;
    const bytes = encoder.encode(cut ? `\n${line}\n` : `${line}\n`);
    let written = 0;
    try {
      while (written < bytes.length) {
        const took = writeSync(written === 0 ? bytes : bytes.subarray(written));
        // A write that takes nothing and says no error would be looped on for ever.
        if (!(took > 0)) throw new Error('The audit file took no bytes of a write');
        written += took;
      }
      cut = false;
    } catch (error) {
      if (written > prefix) cut = !dropped(dropTail, written - prefix);
      else if (written === prefix) cut = false;
      throw error;
    }
  };
}

/** Cuts the part of a line written off the file: whether it is gone (the file then ends with its last whole line's newline). */
function dropped(dropTail: ((bytes: number) => void) | undefined, bytes: number): boolean {
  if (dropTail === undefined) return false;
  try {
    dropTail(bytes);
    return true;
  } catch {
    return false;
  }
}

const encoder = new TextEncoder();
