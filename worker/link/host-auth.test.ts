import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/credentials.ts';
import { ENTITY_ID_HEADER } from '../../shared/link/link-types.ts';
import { createHostAuthenticator } from './host-auth.ts';

async function authenticator() {
  return createHostAuthenticator([
    { 'entity-id': 'alice-laptop', 'secret-sha256': await sha256Hex('s3cret-alice') },
    { 'entity-id': 'bob-desktop', 'secret-sha256': (await sha256Hex('s3cret-bob')).toUpperCase() },
  ]);
}

const headers = (entity: string | null, auth: string | null) => {
  const h = new Headers();
  if (entity !== null) h.set(ENTITY_ID_HEADER, entity);
  if (auth !== null) h.set('Authorization', auth);
  return h;
};

describe('host authentication', () => {
  it('accepts the right secret for the named host, in either hex case', async () => {
    const check = await authenticator();
    expect(await check(headers('alice-laptop', 'Bearer s3cret-alice'))).toEqual({ ok: true, entityId: 'alice-laptop' });
    expect(await check(headers('bob-desktop', 'bearer s3cret-bob'))).toEqual({ ok: true, entityId: 'bob-desktop' });
  });

  it('refuses a wrong secret, another host secret, an unknown host and missing headers with unauthorized', async () => {
    const check = await authenticator();
    const cases = [
      headers('alice-laptop', 'Bearer wrong'),
      headers('alice-laptop', 'Bearer s3cret-bob'),
      headers('mallory', 'Bearer s3cret-alice'),
      headers(null, 'Bearer s3cret-alice'),
      headers('alice-laptop', null),
      headers('alice-laptop', 'Basic s3cret-alice'),
    ];
    for (const h of cases) {
      const result = await check(h);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error.reason).toBe('unauthorized');
        expect(result.error.message).not.toContain('s3cret');
      }
    }
  });

  it('refuses a malformed secret-sha256 when built', () => {
    expect(() => createHostAuthenticator([{ 'entity-id': 'alice-laptop', 'secret-sha256': 'abc' }])).toThrow(/64 hex digits/);
  });
});
