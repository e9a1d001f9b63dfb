import * as sdk from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { LATEST_PROTOCOL_VERSION, negotiatedVersion, SUPPORTED_PROTOCOL_VERSIONS } from './protocol-versions.ts';

describe('protocol versions', () => {
  it('are the SDK\'s, so agents negotiate as with the SDK', () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(sdk.SUPPORTED_PROTOCOL_VERSIONS);
    expect(LATEST_PROTOCOL_VERSION).toBe(sdk.LATEST_PROTOCOL_VERSION);
  });

  it('answers a listed version with itself and anything else with the latest', () => {
    expect(negotiatedVersion('2025-03-26')).toBe('2025-03-26');
    expect(negotiatedVersion('1999-01-01')).toBe(LATEST_PROTOCOL_VERSION);
    expect(negotiatedVersion(undefined)).toBe(LATEST_PROTOCOL_VERSION);
  });
});
