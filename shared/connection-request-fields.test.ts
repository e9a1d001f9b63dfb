import { describe, expect, it } from 'vitest';
import { mcpConnectionSchema } from './connection-request.ts';
import { CONNECTION_KEYS } from './connection-request-fields.ts';

describe('the connection keys written out for the memoized check', () => {
  it('are the schema\'s keys, in the schema\'s order', () => {
    expect(CONNECTION_KEYS).toEqual(Object.keys(mcpConnectionSchema().shape));
  });
});
