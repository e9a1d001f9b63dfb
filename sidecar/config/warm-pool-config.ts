/**
 * sidecar.json `"warm-pool"`: how many server instances the host starts and initializes ahead of
 * an agent's next session (`sidecar/host/warm-pool.ts`). Every key is optional; what is left out
 * takes the default the config reference prints.
 *
 * @module
 */
import { z } from 'zod';
import { DEFAULT_WARM_POOL } from '../host/warm-pool.ts';

export const WarmPoolConfigSchema = z.strictObject({
  size: z
    .number()
    .int('must be a whole number')
    .min(0, 'must be 0 (no pool) or more')
    .max(256, 'must be at most 256')
    .optional()
    .meta({ default: DEFAULT_WARM_POOL.size })
    .describe('Instances kept ready per agent, server and trust revision, once that agent has had one session of that server; 0 disables the pool'),
  'max-instances': z
    .number()
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1024, 'must be at most 1024')
    .optional()
    .meta({ default: DEFAULT_WARM_POOL.maxInstances })
    .describe('Instances pooled at most on this host, all agents and servers together: the pool\'s share of the host\'s memory'),
  'idle-seconds': z
    .number()
    .int('must be a whole number of seconds')
    .positive('must be at least 1')
    .max(86_400, 'must be at most 86400')
    .optional()
    .meta({ default: DEFAULT_WARM_POOL.idleSeconds })
    .describe('How long the instances of an agent and server are kept when no session of theirs starts, in seconds'),
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
