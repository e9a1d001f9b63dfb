/**
 * Starts the instance a modern agent's requests go to, of the era its server speaks: the probe
 * (`server-era.ts`) on the freshly launched process, or the cached verdict for its config, picks a
 * `LegacyInstance` (initialized by the host) or a `ModernServerInstance` (requests as they are).
 *
 * A verdict that proves wrong is forgotten and the config probed again:
 * - a cached legacy server whose `initialize` fails is relaunched once and probed;
 * - a cached modern server that answers as a legacy one (`onEraMismatch`) has its instance ended,
 *   so the agent's next request launches and probes afresh.
 * A process that ends during the probe is legacy by the spec's rule (some SDKs exit on a request
 * before `initialize`): it is cached so, and a fresh process is initialized. A probe unanswered in
 * time is decided by the `initialize` that follows on the same process: answered, legacy (a dual-era
 * server whose late answer was modern is kept modern for the next launch); refused after a late
 * modern answer, modern, on a fresh process; refused with no answer, nothing is cached.
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import type { Logger } from '../../log.ts';
import { LegacyInstance, type LegacyInstanceOptions } from './legacy-instance.ts';
import { ModernServerInstance } from './modern-server-instance.ts';
import { probeServerEra, type StartedTransport } from './server-era.ts';
import type { EraVerdict, ServerEraCache } from '../../../shared/era-bridge/discover-verdict.ts';

export type ServerInstance = LegacyInstance | ModernServerInstance;

/** What starting an instance needs; `eraKey` (from `serverEraKey`) turns the probe on. */
export type InstanceStart = Omit<LegacyInstanceOptions, 'onActivity' | 'onEnded'> & { eraKey?: string };

export interface InstanceHooks {
  onActivity(inFlight: number): void;
  onEnded(): void;
  /** Aborted when the host stops (`LegacyInstanceOptions.signal`). */
  signal?: AbortSignal;
  initializeTimeoutMs?: number;
}

export interface EraOptions {
  cache: ServerEraCache;
  probeTimeoutMs: number;
  log: Logger;
}

export async function startServerInstance(start: () => Promise<InstanceStart>, hooks: InstanceHooks, eras: EraOptions): Promise<ServerInstance> {
  const options = await start();
  const key = options.eraKey;
  if (key === undefined) return LegacyInstance.start({ ...options, ...hooks });
  const cached = eras.cache.get(key);
  if (cached?.era === 'legacy') {
    try {
      return await LegacyInstance.start({ ...options, ...hooks });
    } catch (error) {
      if (!(error instanceof WireError) || error.reason !== 'launch-failed') throw error;
      eras.log.info('A server cached as legacy did not initialize: probing its era again', { server: options.server });
      eras.cache.forget(key);
      return startServerInstance(start, hooks, eras);
    }
  }
  if (cached?.era === 'modern') return startModern(options, options.transport, cached, key, hooks, eras);
  eras.cache.countProbe(key);
  const outcome = await probeServerEra(options.transport, { timeoutMs: eras.probeTimeoutMs, clientInfo: options.clientInfo });
  if (outcome.transport === null) {
    if (outcome.failure !== null && outcome.failure.reason !== 'server-exited') throw outcome.failure; // the launch failed: no verdict
    eras.cache.set(key, outcome.verdict);
    eras.log.info('Server ended during the era probe: taken for legacy, started again', { server: options.server });
    return LegacyInstance.start({ ...(await start()), ...hooks });
  }
  if (outcome.timedOut === true) {
    let instance: LegacyInstance;
    try {
      instance = await LegacyInstance.start({ ...options, transport: outcome.transport, ...hooks });
    } catch (error) {
      const late = outcome.late();
      if (error instanceof WireError && error.reason === 'launch-failed' && late?.era === 'modern') {
        // A modern server that was still starting: it refused initialize after answering the probe.
        eras.cache.set(key, late);
        eras.log.info('Server era probed: it answered after the probe\'s time and refused initialize', { server: options.server, era: 'modern' });
        return startServerInstance(start, hooks, eras);
      }
      if (error instanceof WireError && error.reason === 'server-exited' && late === null) {
        // It ended on the probe once it read it, as an SDK that exits on a request before
        // initialize does: legacy by the spec's rule, as when it ends within the probe's time.
        eras.cache.set(key, { era: 'legacy' });
        eras.log.info('Server ended after an era probe unanswered in time: taken for legacy, started again', { server: options.server });
        return LegacyInstance.start({ ...(await start()), ...hooks });
      }
      throw error; // no verdict kept: the next launch probes
    }
    const verdict = outcome.late() ?? { era: 'legacy' as const };
    outcome.withdraw();
    eras.cache.set(key, verdict);
    eras.log.info('Server era probed: it answered initialize after a probe unanswered in time', { server: options.server, era: verdict.era });
    return instance;
  }
  eras.cache.set(key, outcome.verdict);
  eras.log.info('Server era probed', { server: options.server, era: outcome.verdict.era });
  if (outcome.verdict.era === 'modern') return startModern(options, outcome.transport, outcome.verdict, key, hooks, eras);
  return LegacyInstance.start({ ...options, transport: outcome.transport, ...hooks });
}

async function startModern(
  options: InstanceStart,
  transport: StartedTransport,
  verdict: Extract<EraVerdict, { era: 'modern' }>,
  key: string,
  hooks: InstanceHooks,
  eras: EraOptions,
): Promise<ModernServerInstance> {
  let instance: ModernServerInstance | null = null;
  instance = await ModernServerInstance.start({
    server: options.server,
    transport,
    discover: verdict.discover,
    log: options.log,
    ...hooks,
    onEraMismatch: () => {
      eras.cache.forget(key);
      // Its listens drop, not complete: their agents listen again, on the server relaunched.
      void instance?.close(false);
    },
  });
  return instance;
}

/** True for an instance of a modern server: requests go to it with their `_meta`, `server/discover` included. */
export function isModernServer(instance: ServerInstance): instance is ModernServerInstance {
  return instance instanceof ModernServerInstance;
}
