/**
 * `OAuthState`: the built-in authorization server's state on Workers, the `OAuthStore` of
 * `worker/auth/oauth/oauth-store.ts` kept in one Durable Object's storage (binding `OAUTH_STATE`,
 * named `idFromName('oauth')`), so every isolate sees the same clients, grants and token hashes.
 * The contract holds as the interface asks: one object serialises its storage calls, so `take`
 * (a get, then a delete with no other I/O between) gives a record to exactly one of two callers,
 * and `add` (a get, then a put only when nothing live was there) keeps exactly one of two values;
 * a put resolves once stored; an expired record reads as absent and is deleted on that read.
 * Entries are `<kind>:<id>` → `{ value, expiresAt }`; ids are already hashes or random ids.
 *
 * Records nobody reads again (a sign-in never answered, a used code, an idle client's activity
 * mark) are swept: a write, at most once per {@link SWEEP_EVERY_MS} (the next time kept in
 * storage, `sweep:next`, so an object woken often does not sweep each time), deletes every
 * expired entry, as the file store prunes on each write. Only writes sweep, and strangers write
 * nothing but the server key, once.
 *
 * `DurableObjectOAuthStore` is the store each app is given: one small request to the object per
 * call.
 *
 * @module
 */
import * as z from '../../../shared/zod.ts';
import { OAUTH_RECORD_KINDS, type JsonValue, type OAuthRecordKind, type OAuthStore } from '../../auth/oauth/oauth-store.ts';
import type { DurableObjectNamespace, DurableObjectState } from './workers-runtime.ts';

const Operation = z.discriminatedUnion('op', [
  z.strictObject({ op: z.enum(['get', 'take', 'delete']), kind: z.enum(OAUTH_RECORD_KINDS), id: z.string().check(z.minLength(1), z.maxLength(512)) }),
  z.strictObject({ op: z.enum(['put', 'add']), kind: z.enum(OAUTH_RECORD_KINDS), id: z.string().check(z.minLength(1), z.maxLength(512)), value: z.json(), expiresAt: z.nullable(z.number()) }),
]);

interface Entry {
  value: JsonValue;
  expiresAt: number | null;
}

export const SWEEP_EVERY_MS = 3_600_000;
/** Not `<kind>:<id>`: no operation can name it. */
const SWEEP_KEY = 'sweep:next';

export class OAuthState {
  readonly #state: DurableObjectState;
  /** When the next sweep is due, once read from storage. */
  #nextSweep: number | undefined;

  constructor(state: DurableObjectState) {
    this.#state = state;
  }

  async fetch(request: Request): Promise<Response> {
    const parsed = Operation.safeParse(await request.json().catch(() => null));
    if (!parsed.success) return Response.json({ error: 'Invalid store operation' }, { status: 400 });
    const operation = parsed.data;
    const storage = this.#state.storage;
    const key = `${operation.kind}:${operation.id}`;
    switch (operation.op) {
      case 'put':
        await storage.put(key, { value: operation.value as JsonValue, expiresAt: operation.expiresAt } satisfies Entry);
        await this.#sweepIfDue();
        return Response.json({});
      case 'add': {
        const existing = (await storage.get(key)) as Entry | undefined;
        if (existing !== undefined && (existing.expiresAt === null || existing.expiresAt > Date.now())) return Response.json({ value: existing.value });
        await storage.put(key, { value: operation.value as JsonValue, expiresAt: operation.expiresAt } satisfies Entry);
        await this.#sweepIfDue();
        return Response.json({ value: operation.value });
      }
      case 'delete':
        await storage.delete(key);
        return Response.json({});
      case 'get':
      case 'take': {
        const entry = (await storage.get(key)) as Entry | undefined;
        const live = entry !== undefined && (entry.expiresAt === null || entry.expiresAt > Date.now());
        if (entry !== undefined && (!live || operation.op === 'take')) await storage.delete(key);
        return Response.json(live ? { value: entry.value } : {});
      }
    }
  }

  /** Deletes every expired entry, when a sweep is due (kind by kind, so only record entries are listed). */
  async #sweepIfDue(): Promise<void> {
    const storage = this.#state.storage;
    const now = Date.now();
    this.#nextSweep ??= ((await storage.get(SWEEP_KEY)) as number | undefined) ?? 0;
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + SWEEP_EVERY_MS;
    await storage.put(SWEEP_KEY, this.#nextSweep);
    for (const kind of OAUTH_RECORD_KINDS) {
      for (const [key, entry] of await storage.list({ prefix: `${kind}:` })) {
        const { expiresAt } = entry as Entry;
        if (expiresAt !== null && expiresAt <= now) await storage.delete(key);
      }
    }
  }
}

export class DurableObjectOAuthStore implements OAuthStore {
  readonly #namespace: DurableObjectNamespace;

  constructor(namespace: DurableObjectNamespace) {
    this.#namespace = namespace;
  }

  get(kind: OAuthRecordKind, id: string): Promise<JsonValue | undefined> {
    return this.#call({ op: 'get', kind, id });
  }

  async put(kind: OAuthRecordKind, id: string, value: JsonValue, expiresAt: number | null): Promise<void> {
    await this.#call({ op: 'put', kind, id, value, expiresAt });
  }

  take(kind: OAuthRecordKind, id: string): Promise<JsonValue | undefined> {
    return this.#call({ op: 'take', kind, id });
  }

  async delete(kind: OAuthRecordKind, id: string): Promise<void> {
    await this.#call({ op: 'delete', kind, id });
  }

  async add(kind: OAuthRecordKind, id: string, value: JsonValue, expiresAt: number | null): Promise<JsonValue> {
    return (await this.#call({ op: 'add', kind, id, value, expiresAt }))!;
  }

  async #call(operation: z.input<typeof Operation>): Promise<JsonValue | undefined> {
    const stub = this.#namespace.get(this.#namespace.idFromName('oauth'));
    const response = await stub.fetch('https://oauth-state.switchyard/', { method: 'POST', body: JSON.stringify(operation) });
    if (!response.ok) {
      const why = ((await response.json().catch(() => ({}))) as { error?: unknown }).error;
      // An object still running older code (a deploy under way) knows neither `add` nor the `key` kind.
      const older = why === 'Invalid store operation' ? ': the OAuthState Durable Object runs another version of the worker than this isolate (a deploy still under way?); it passes once both run the same one' : '';
      throw new Error(`The OAuth state object refused a ${operation.op} of a "${operation.kind}" record: HTTP ${response.status}${older}`);
    }
    const body = (await response.json()) as { value?: JsonValue };
    return body.value;
  }
}
