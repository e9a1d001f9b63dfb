import { describe, expect, it } from 'vitest';
import { ENTITY_ID_HEADER } from '../../../shared/link/link-types.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER, UPGRADE_PROOF_WINDOW_S } from '../../../shared/link/link-upgrade-proof.ts';
import { hostCredential, hostSigner } from '../../../test/support/configs.ts';
import { createHostVerifier } from '../../link/host-auth.ts';
import { createLinkUpgradeGate } from '../../link/link-upgrade-gate.ts';
import { SpentUpgradeProofs, type SpentProofStore } from '../../link/spent-upgrade-proofs.ts';
import { StoredSpentProofs } from './stored-spent-proofs.ts';
import type { DurableObjectStorage } from './workers-runtime.ts';

const ORIGIN = '127.0.0.1:8787';
const ALICE = hostCredential('alice-laptop');
const T = 1_900_000_000;

/** A Durable Object's key-value storage, as the runtime keeps it across hibernation. */
function memoryStorage(): DurableObjectStorage & { entries: Map<string, unknown> } {
  const entries = new Map<string, unknown>();
  return {
    entries,
    get: async (key) => entries.get(key),
    put: async (key, value) => void entries.set(key, value),
    delete: async (key) => entries.delete(key),
    list: async (options) => new Map([...entries].filter(([key]) => key.startsWith(options?.prefix ?? ''))),
  };
}

/** The host's object as one instance builds it: a gate over `spent`. */
function objectInstance(spent: SpentProofStore, nowMs: number) {
  const verifier = createHostVerifier([{ 'entity-id': 'alice-laptop', 'public-key': ALICE.publicKey }]);
  return createLinkUpgradeGate({ verifier, allowedHosts: ['127.0.0.1'], now: () => nowMs, spent });
}

async function dial(gate: ReturnType<typeof objectInstance>, proof: string) {
  const verdict = await gate(new Request(`http://${ORIGIN}/link`, { headers: { host: ORIGIN, upgrade: 'websocket', [ENTITY_ID_HEADER]: 'alice-laptop', [LINK_PROOF_HEADER]: proof } }));
  return verdict.ok ? 'upgraded' : verdict.check;
}

describe('used link proofs in a Durable Object\'s storage', () => {
  it('stay used for the instance the object is rebuilt as after hibernating, where its memory alone forgot them', async () => {
    const proof = await createLinkProofHeader(await hostSigner(ALICE), { origin: ORIGIN, entityId: 'alice-laptop', nowMs: T * 1000 });
    const storage = memoryStorage();
    expect(await dial(objectInstance(new StoredSpentProofs(storage, { windowSeconds: UPGRADE_PROOF_WINDOW_S }), T * 1000), proof)).toBe('upgraded');
    // Hibernated and woken: a new instance, new memory, the same storage.
    expect(await dial(objectInstance(new StoredSpentProofs(storage, { windowSeconds: UPGRADE_PROOF_WINDOW_S }), T * 1000 + 60_000), proof)).toBe('replayed');
    // What memory alone did: each wake took the copy again.
    expect(await dial(objectInstance(new SpentUpgradeProofs({ windowSeconds: UPGRADE_PROOF_WINDOW_S }), T * 1000), proof)).toBe('upgraded');
    expect(await dial(objectInstance(new SpentUpgradeProofs({ windowSeconds: UPGRADE_PROOF_WINDOW_S }), T * 1000 + 60_000), proof)).toBe('upgraded');
  });

  it('writes once per verified dial, deletes a proof once its time left the window, and holds one host\'s bucket at most', async () => {
    const storage = memoryStorage();
    const store = (max = 3) => new StoredSpentProofs(storage, { windowSeconds: UPGRADE_PROOF_WINDOW_S, maxPerHost: max });
    expect(await store().spend('alice-laptop', 'n1', T, T * 1000)).toBe('fresh');
    expect(await store().spend('alice-laptop', 'n2', T + 10, T * 1000)).toBe('fresh');
    expect(await store().spend('alice-laptop', 'n3', T + 20, T * 1000)).toBe('fresh');
    expect(storage.entries.size).toBe(3);
    const full = store();
    expect(await full.spend('alice-laptop', 'n4', T, T * 1000)).toBe('full');
    expect(await full.roomAt('alice-laptop', T * 1000)).toBe((T + 301) * 1000);
    // At T + 301 s the first proof no longer passes the time check: it goes, and there is room.
    expect(await store().spend('alice-laptop', 'n4', T + 301, (T + 301) * 1000)).toBe('fresh');
    expect([...storage.entries.keys()].sort()).toEqual(['n2', 'n3', 'n4'].map((n) => `spent-link-proof:alice-laptop:${n}`));
    expect(await store().spend('alice-laptop', 'n2', T + 10, (T + 301) * 1000)).toBe('replayed');
  });
});
