/**
 * sidecar.json `"warm-pool"`: how many server instances the host starts and initializes ahead of
 * an agent's next session (`sidecar/host/warm-pool.ts`). Every key is optional; what is left out
 * takes the default the config reference prints.
 *
 * @module
 */
import * as z from '../../shared/zod.ts';
import { DEFAULT_WARM_POOL } from '../host/warm-pool.ts';

export const WarmPoolConfigSchema = z.strictObject({
  size: z
    .optional(z.number().check(z.int('must be a whole number'), z.gte(0, 'must be 0 (no pool) or more'), z.lte(256, 'must be at most 256')))
    .check(
      z.meta({ default: DEFAULT_WARM_POOL.size }),
      z.describe('Instances kept ready per agent, server and trust revision, once that agent has had one session of that server; 0 disables the pool'),
    ),
  'max-instances': z
    .optional(z.number().check(z.int('must be a whole number'), z.gte(0, 'must be 0 or more'), z.lte(1024, 'must be at most 1024')))
    .check(
      z.meta({ default: DEFAULT_WARM_POOL.maxInstances }),
      z.describe('Instances pooled at most on this host, all agents and servers together: the pool\'s share of the host\'s memory'),
    ),
  'idle-seconds': z
    .optional(z.number().check(z.int('must be a whole number of seconds'), z.positive('must be at least 1'), z.lte(86_400, 'must be at most 86400')))
    .check(
      z.meta({ default: DEFAULT_WARM_POOL.idleSeconds }),
      z.describe('How long the instances of an agent and server are kept when no session of theirs starts, in seconds; they end sooner once the worker no longer routes that agent and server here'),
    ),
});

export interface WarmPoolSettings {
  size?: number;
  maxInstances?: number;
  idleSeconds?: number;
}

export function warmPoolSettings(file: z.infer<typeof WarmPoolConfigSchema>): WarmPoolSettings {
  return {
    ...(file.size !== undefined ? { size: file.size } : {}),
    ...(file['max-instances'] !== undefined ? { maxInstances: file['max-instances'] } : {}),
    ...(file['idle-seconds'] !== undefined ? { idleSeconds: file['idle-seconds'] } : {}),
  };
}
