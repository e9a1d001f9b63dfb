import { describe, expect, it } from 'vitest';
import { memoryGuard, pointLabel, reserveMib, WORKLOADS } from './scale-workloads.ts';

describe('the scale curve memory guard', () => {
  const machine = { availableMib: 22_000, reserveMib: reserveMib(24_000) };

  it('keeps a third of the machine, at least 4 GiB, for everyone else', () => {
    expect(reserveMib(24_000)).toBe(8_000);
    expect(reserveMib(6_000)).toBe(4_096);
  });

  it('lets a level run when its sessions fit beside the reserve', () => {
    expect(memoryGuard({ sessions: 256, mibPerSession: WORKLOADS['legacy-echo'].mibPerSession }, machine)).toBeNull();
    expect(memoryGuard({ sessions: 14_000, mibPerSession: 1 }, machine)).toBeNull();
  });

  it('says why a level does not run, with the figures that decided it', () => {
    expect(memoryGuard({ sessions: 256, mibPerSession: 60 }, machine)).toBe('256 × 60 MiB = 15360 MiB wanted, 22000 MiB available and 8000 MiB kept for the rest of the machine');
    expect(memoryGuard({ sessions: 14_001, mibPerSession: 1 }, machine)).not.toBeNull();
  });

  it('never stops a level where memory is unknown', () => {
    expect(memoryGuard({ sessions: 1_000_000, mibPerSession: 100 }, null)).toBeNull();
  });

  it('labels every row with its gateway and what its sessions are', () => {
    expect(pointLabel({ gateway: 'supergateway', workload: 'legacy-echo' })).toBe('supergateway: legacy sessions, one raw echo process each');
    expect(pointLabel({ gateway: 'switchyard', workload: 'modern-shared' })).toMatch(/^switchyard: modern stateless clients of one agent, one shared server-everything$/);
  });
});
