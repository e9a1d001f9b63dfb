/**
 * An `OAuthStore` kept in memory and written through to one JSON file on every change, for the
 * runtimes that run as one process with a disk: Node and Deno. The file access is injected (each
 * runtime adapter passes its own), so this file stays web-standard.
 *
 * Writes are serialised and atomic (write a temporary file, then rename), so a crash leaves the
 * previous or the next state, never half of one. Reads and `take` work on the in-memory copy
 * synchronously, which makes `take` and `add` atomic within the process. Expired records are
 * dropped on load and whenever the file is written. The file holds hashes and metadata, and one
 * secret, the server key that authenticates client ids and consent forms (`server-key.ts`): no
 * token, code or client secret is ever stored, in the clear or otherwise. One process per file
 * (the worker owns it).
 *
 * @module
 */
import type { JsonValue, OAuthRecordKind, OAuthStore } from '../oauth-store.ts';
import { jsonSyntaxProblem } from '../../../../shared/json-syntax-problem.ts';

/** The few file operations the store needs; paths are the adapter's own. */
export interface StateFileAccess {
  /** The file's text, or null when it does not exist. */
  read(): Promise<string | null>;
  /** Replaces the file's content atomically (temporary file + rename), mode 0600. */
  write(text: string): Promise<void>;
}

interface Entry {
  value: JsonValue;
  expiresAt: number | null;
}

const FORMAT = 'switchyard-oauth-state/1';

export class FileOAuthStore implements OAuthStore {
  readonly #file: StateFileAccess;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  #writing: Promise<void> = Promise.resolve();

  private constructor(file: StateFileAccess, now: () => number) {
    this.#file = file;
    this.#now = now;
  }

  /** Loads the file (a missing one is an empty store); a corrupt one is an error, never silently reset. */
  static async open(file: StateFileAccess, options: { now?: () => number } = {}): Promise<FileOAuthStore> {
    const store = new FileOAuthStore(file, options.now ?? Date.now);
    const text = await file.read();
    if (text !== null && text.trim() !== '') {
      let parsed: { format?: unknown; records?: unknown };
      try {
        parsed = JSON.parse(text) as typeof parsed;
      } catch (error) {
        throw new SyntaxError(`Cannot read the OAuth state file: ${jsonSyntaxProblem(error, text)}`);
      }
      if (parsed.format !== FORMAT || typeof parsed.records !== 'object' || parsed.records === null) {
        throw new SyntaxError(`Cannot read the OAuth state file: expected format "${FORMAT}"`);
      }
      for (const [key, entry] of Object.entries(parsed.records as Record<string, Entry>)) store.#entries.set(key, entry);
      store.#prune();
    }
    return store;
  }

  /** An empty store that writes nowhere, for tests and for runtimes that opt out of persistence. */
  static inMemory(options: { now?: () => number } = {}): FileOAuthStore {
    return new FileOAuthStore({ read: async () => null, write: async () => {} }, options.now ?? Date.now);
  }

  async get(kind: OAuthRecordKind, id: string): Promise<JsonValue | undefined> {
    return this.#live(`${kind}:${id}`)?.value;
  }

  async put(kind: OAuthRecordKind, id: string, value: JsonValue, expiresAt: number | null): Promise<void> {
    this.#entries.set(`${kind}:${id}`, { value, expiresAt });
    await this.#persist();
  }

  async take(kind: OAuthRecordKind, id: string): Promise<JsonValue | undefined> {
    const key = `${kind}:${id}`;
    const entry = this.#live(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    await this.#persist();
    return entry.value;
  }

  async add(kind: OAuthRecordKind, id: string, value: JsonValue, expiresAt: number | null): Promise<JsonValue> {
    const key = `${kind}:${id}`;
    const existing = this.#live(key);
    if (existing !== undefined) return existing.value;
    const entry = { value, expiresAt };
    this.#entries.set(key, entry);
    try {
      await this.#persist();
    } catch (error) {
      // Not kept unless stored: a server key used but never saved would end every client it sealed at the next start.
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
      throw error;
    }
    return value;
  }

  async delete(kind: OAuthRecordKind, id: string): Promise<void> {
    if (!this.#entries.delete(`${kind}:${id}`)) return;
    await this.#persist();
  }

  /** Resolves once every write so far has reached the file. */
  flushed(): Promise<void> {
    return this.#writing;
  }

  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  #prune(): void {
    const now = this.#now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt !== null && entry.expiresAt <= now) this.#entries.delete(key);
  }

  /** Chains a write of the current state after the previous one; each caller waits for its own. */
  #persist(): Promise<void> {
    const next = this.#writing.then(async () => {
      this.#prune();
      await this.#file.write(JSON.stringify({ format: FORMAT, records: Object.fromEntries(this.#entries) }));
    });
    // A failed write fails its caller; the chain itself keeps going for the next one.
    this.#writing = next.catch(() => {});
    return next;
  }
}
