import { describe, expect, it } from 'vitest';
import type { SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { expectationChecks } from './doctor-expectations.ts';

describe('doctor: what the worker expects, when it does not say', () => {
  it('says only that nothing was compared, without guessing why', async () => {
    // The config is not read when there is nothing to compare it with.
    const [check, ...rest] = await expectationChecks({} as SidecarConfig, undefined);
    expect(rest).toEqual([]);
    expect(check).toEqual({
      name: 'what the worker expects',
      ok: true,
      detail: 'the worker accepted the probe without saying what it expects of this host: server names and pinned revisions not compared',
    });
    expect(check!.detail).not.toMatch(/version|old/);
  });
});
