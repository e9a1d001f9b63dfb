import { DEFAULT_INHERITED_ENV_VARS } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { INHERITED_ENV_NAMES, inheritedEnvironment } from './inherited-environment.ts';

describe('inheritedEnvironment', () => {
  it('inherits exactly the names the MCP SDK lets a stdio server inherit', () => {
    expect(INHERITED_ENV_NAMES).toEqual(DEFAULT_INHERITED_ENV_VARS);
  });

  it('keeps those names only, and drops values that look like shell functions', () => {
    const env = { PATH: '/usr/bin', HOME: '/home/a', SECRET_TOKEN: 's3cret', SHELL: '() { :; }; echo pwned', USER: undefined };
    expect(inheritedEnvironment(env)).toEqual({ PATH: '/usr/bin', HOME: '/home/a' });
  });
});
