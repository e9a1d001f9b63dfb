import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/validation.ts';
import { parseSidecarConfig } from './sidecar-config.ts';
import { UserNameSchema } from './user-name.ts';

const base = { worker: 'http://127.0.0.1:8787', 'entity-id': 'alice-laptop', 'secret-file': 'host.secret' };

describe('sidecar.json', () => {
  it('accepts a user name that is one path segment', () => {
    expect(parseSidecarConfig({ ...base, user: 'alice.b_c-1' }).user).toBe('alice.b_c-1');
  });

  it.each(['..', 'a..b', 'a/b', '.hidden', ''])('rejects the user name %j, naming the key', (user) => {
    let error: unknown;
    try {
      parseSidecarConfig({ ...base, user });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain('user');
  });

  it('says why a user name with ".." is refused', () => {
    const result = UserNameSchema.safeParse('a..b');
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('must not contain ".."');
  });
});
