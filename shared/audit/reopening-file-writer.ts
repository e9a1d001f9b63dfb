/**
 * An audit file that follows its path. logrotate's default moves the file and creates a new one
 * in its place; a writer holding the old descriptor would go on writing into the moved file, and
 * the new one would stay empty. So at most once a second, at a write, the path is looked at again:
 * when it names another file than the one open (moved and re-created) or none (moved away), the
 * path is opened again (created 0600) and the line goes there. Lines written within that second
 * go to the moved file, where they are kept, not lost (logrotate's `delaycompress` keeps that
 * file uncompressed until the next rotation).
 *
 * The runtime's file calls are passed in, so Node and Deno share it.
 *
 * @module
 */
import { wholeLineWriter } from './whole-line-writer.ts';

/** Which file a descriptor or a path is: device and inode. */
export interface FileIdentity {
  dev: number;
  ino: number;
  /** Its hard links, when known: 0 for an open file deleted from every folder. */
  links?: number;
}

/** The file calls one runtime offers, for one open file at a time. */
export interface AuditFileSystem<Handle> {
  /** Opens `path` for appending, creating it 0600; throws when it cannot. */
  open(path: string): Handle;
  /** The open file's identity. */
  identify(handle: Handle): FileIdentity;
  /** The identity of what `path` names now, or undefined when nothing is there; throws when it cannot tell. */
  identifyPath(path: string): FileIdentity | undefined;
  write(handle: Handle, bytes: Uint8Array): number;
  /** Cuts the open file's last `bytes` bytes off (a line a full disk cut); throws when it cannot. */
  dropTail?(handle: Handle, bytes: number): void;
  close(handle: Handle): void;
  /** Milliseconds on a monotonic clock. */
  now(): number;
}

/** How often at most the path is looked at again, in milliseconds. */
export const REOPEN_CHECK_MS = 1_000;

export interface ReopeningOptions {
  /** Told once when the path cannot be followed (lines then stay in the file open), and once when it can again. */
  warn?(message: string, fields: Record<string, unknown>): void;
}

/** An appending writer of whole lines to `path` that follows the path when it is moved; throws when the first open fails. */
export function reopeningFileWriter<Handle>(path: string, fs: AuditFileSystem<Handle>, options: ReopeningOptions = {}): (line: string) => void {
  let handle = fs.open(path);
  // Null: the open file cannot be told apart from another (Deno without read permission on it),
  // so the path is not followed; writing needs no more than the open.
  let identity = safely(() => fs.identify(handle)) ?? null;
  let write = lineWriterFor(handle, fs);
  let checkedAt = fs.now();
  let stuck = false;
  /** The open file was deleted (no link left) while its path cannot be opened again. */
  let deleted = false;
  return (line) => {
    const now = fs.now();
    if (identity !== null && now - checkedAt >= REOPEN_CHECK_MS) {
      checkedAt = now;
      let current: FileIdentity | undefined;
      let looked = true;
      try {
        current = fs.identifyPath(path);
      } catch {
        looked = false; // not allowed to look (Deno without read permission): keep the open file
      }
      if (looked && (current === undefined || current.dev !== identity.dev || current.ino !== identity.ino)) {
        // When the path cannot be opened again (its folder gone), the line goes to the open file,
        // not nowhere; the next check tries again.
        let failure: unknown;
        const opened = safely(() => fs.open(path), (error) => (failure = error));
        if (opened !== undefined) {
          safely(() => fs.close(handle));
          handle = opened;
          identity = safely(() => fs.identify(opened)) ?? { dev: -1, ino: -1 };
          write = lineWriterFor(opened, fs);
          if (stuck) options.warn?.('Audit file followed again: lines go to its path', { file: path });
          stuck = false;
          deleted = false;
        } else {
          // Deleted with its folder, the open file is in no folder: a line written there is lost, and counted so.
          deleted = safely(() => fs.identify(handle))?.links === 0;
          if (!stuck) {
            // Lines are kept in the moved file, but lost with it when the rotation deletes it.
            stuck = true;
            options.warn?.(
              deleted ? 'Audit file deleted and its path cannot be opened again: lines are lost until it can' : 'Audit file moved and its path cannot be opened again: lines go on into the moved file',
              { file: path, error: failure },
            );
          }
        }
      }
    }
    if (stuck && deleted) throw new Error(`The audit file ${path} was deleted and its path cannot be opened again`);
    write(line);
  };
}

function lineWriterFor<Handle>(handle: Handle, fs: AuditFileSystem<Handle>): (line: string) => void {
  const dropTail = fs.dropTail;
  return wholeLineWriter((bytes) => fs.write(handle, bytes), dropTail === undefined ? undefined : (bytes) => dropTail(handle, bytes));
}

function safely<T>(call: () => T, onError?: (error: unknown) => void): T | undefined {
  try {
    return call();
  } catch (error) {
    onError?.(error);
    return undefined;
  }
}
