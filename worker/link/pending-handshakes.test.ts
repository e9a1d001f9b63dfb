import { describe, expect, it } from 'vitest';
import { PendingHandshakes } from './pending-handshakes.ts';

describe('pending handshakes', () => {
  it('counts per entity id and in total, and a slot released twice frees one place only', () => {
    const pending = new PendingHandshakes({ total: 3, perEntity: 2 });
    const a1 = pending.admit('a');
    const a2 = pending.admit('a');
    expect(pending.admit('a')).toEqual({ ok: false, limit: 'per-entity', max: 2 });
    const b1 = pending.admit('b');
    expect(pending.admit('c')).toEqual({ ok: false, limit: 'total', max: 3 });
    if (!a1.ok || !a2.ok || !b1.ok) throw new Error('expected slots');
    a1.release();
    a1.release();
    expect([pending.total, pending.of('a')]).toEqual([2, 1]);
    expect(pending.admit('c').ok).toBe(true);
    expect(pending.admit('c').ok).toBe(false);
    a2.release();
    expect(pending.of('a')).toBe(0);
  });
});
