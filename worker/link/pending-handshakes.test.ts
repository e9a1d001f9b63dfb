import { describe, expect, it } from 'vitest';
import { PendingHandshakes } from './pending-handshakes.ts';

describe('pending handshakes', () => {
  it('counts per entity id and in total; a new one past an id\'s limit takes the place of that id\'s oldest; a slot released twice frees one place only', () => {
    const pending = new PendingHandshakes({ total: 3, perEntity: 2 });
    const evicted: string[] = [];
    const admit = (id: string, name: string) => pending.admit(id, () => evicted.push(name));
    const a1 = admit('a', 'a1');
    const a2 = admit('a', 'a2');
    const a3 = admit('a', 'a3');
    expect([a3.ok, evicted, pending.of('a'), pending.total]).toEqual([true, ['a1'], 2, 2]);
    const b1 = admit('b', 'b1');
    expect(admit('c', 'c1')).toEqual({ ok: false, limit: 'total', max: 3 });
    if (!a1.ok || !a2.ok || !b1.ok) throw new Error('expected slots');
    // The evicted one's own release (its socket closing) frees nothing more.
    a1.release();
    expect([pending.total, pending.of('a')]).toEqual([3, 2]);
    a2.release();
    a2.release();
    expect([pending.total, pending.of('a')]).toEqual([2, 1]);
    expect(admit('c', 'c2').ok).toBe(true);
    expect(admit('c', 'c3').ok).toBe(false);
  });
});
