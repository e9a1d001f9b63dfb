import { describe, expect, it } from 'vitest';
import { unavailableTool } from './availability.ts';

describe('the placeholder of an unavailable server', () => {
  it('says what comes next by the reason: a retry for a failure that may pass, a new session for one that does not, nothing for one still starting', () => {
    expect(unavailableTool('files', { reason: 'host-offline', message: 'Host "laptop" is offline' }).description).toBe(
      'Server "files" is unavailable (reason: host-offline): Host "laptop" is offline. Its tools appear when it is reachable again; list tools to retry.',
    );
    expect(unavailableTool('files', { reason: 'trust-profile-stale', message: 'Trust profile "workspace" changed on this host' }).description).toBe(
      'Server "files" is unavailable (reason: trust-profile-stale): Trust profile "workspace" changed on this host. It stays so for this session: a new session, or a change of config, is needed first.',
    );
    expect(unavailableTool('files', { reason: 'starting', message: 'Server "files" is still starting' }).description).toBe('Server "files" is unavailable (reason: starting): Server "files" is still starting.');
  });
});
