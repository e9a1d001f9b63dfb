/**
 * The scale curve's workloads (what each row's sessions are, and the memory one more session of
 * each costs) and the memory guard that decides whether a level runs on this machine. Pure, so
 * the unit tests check it without starting anything.
 *
 * @module
 */

export type ScaleGateway = 'switchyard' | 'supergateway';
export type ScaleWorkload = 'legacy-everything' | 'legacy-echo' | 'modern-shared';

/**
 * What each workload is, and the memory one more session of it costs the machine (MiB): the
 * server's proportional set size (PSS: what it takes from MemAvailable, where RSS would count
 * node's shared pages again in every process), measured on this machine as 29 MiB for
 * server-everything and 10 MiB for the raw echo server, with room for heap growth, plus the
 * worker's and the sidecar's share of a session.
 */
export const WORKLOADS: Record<ScaleWorkload, { label: string; mibPerSession: number }> = {
  'legacy-everything': { label: 'legacy sessions, one server-everything process each', mibPerSession: 45 },
  'legacy-echo': { label: 'legacy sessions, one raw echo process each', mibPerSession: 16 },
  'modern-shared': { label: 'modern stateless clients of one agent, one shared server-everything', mibPerSession: 1 },
};

/** The machine's memory kept for everyone else: a third of it, at least 4 GiB. */
export function reserveMib(totalMib: number): number {
  return Math.max(4096, Math.round(totalMib / 3));
}

/**
 * Why a level must not run on this machine, or null when it may: it may when its sessions' memory
 * fits in what is available beyond the reserve. Unknown memory (off Linux) never stops a level.
 */
export function memoryGuard(level: { sessions: number; mibPerSession: number }, memory: { availableMib: number; reserveMib: number } | null): string | null {
  if (memory === null) return null;
  const wanted = level.sessions * level.mibPerSession;
  if (wanted <= memory.availableMib - memory.reserveMib) return null;
  return `${level.sessions} × ${level.mibPerSession} MiB = ${wanted} MiB wanted, ${memory.availableMib} MiB available and ${memory.reserveMib} MiB kept for the rest of the machine`;
}

/** The row label of a point: gateway, workload, and what its sessions are. */
export function pointLabel(point: { gateway: ScaleGateway; workload: ScaleWorkload }): string {
  return `${point.gateway}: ${WORKLOADS[point.workload].label}`;
}
