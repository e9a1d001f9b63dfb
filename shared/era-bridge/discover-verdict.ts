/**
 * What a server's answer to `server/discover` says of its era, and where a host or worker keeps
 * what it learnt (`ServerEraCache`): a `DiscoverResult`, or a recognised modern error (-32022
 * naming `data.supported`), means modern; any other answer, or none in time, legacy. The verdict
 * is never keyed to one error code, as the spec requires. The stdio probe that asks it is the
 * sidecar's (`sidecar/host/modern/server-era.ts`); a legacy agent's transport asks it of a server
 * that refused its `initialize` (`legacy-agent-transport.ts`).
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import * as z from '../zod.ts';

/** How long the probe waits for an answer before taking the server for legacy. */
export const DEFAULT_PROBE_TIMEOUT_MS = 2000;

/** `server/discover`'s result (schema `DiscoverResult`), read as far as the host needs it. */
export const discoverResultSchema = z.lazily(() =>
  z.looseObject({
    resultType: z.optional(z.string()),
    supportedVersions: z.array(z.string()).check(z.minLength(1)),
    capabilities: z.record(z.string(), z.unknown()),
    instructions: z.optional(z.string()),
  }),
);
export type DiscoverResult = z.infer<ReturnType<typeof discoverResultSchema>>;

const UNSUPPORTED_PROTOCOL_VERSION = -32022;
const unsupportedVersionErrorSchema = z.lazily(() =>
  z.looseObject({
    code: z.literal(UNSUPPORTED_PROTOCOL_VERSION),
    data: z.looseObject({ supported: z.array(z.string()) }),
  }),
);

export type EraVerdict = { era: 'modern'; discover: DiscoverResult | null; supported: string[] } | { era: 'legacy' };

/** Verdicts per server config key; a host holds one for its lifetime, a worker one per isolate. */
export class ServerEraCache {
  readonly #verdicts = new Map<string, EraVerdict>();
  /** How many probes have run, per key (status and tests). */
  readonly #probes = new Map<string, number>();

  get(key: string): EraVerdict | undefined {
    return this.#verdicts.get(key);
  }

  set(key: string, verdict: EraVerdict): void {
    this.#verdicts.set(key, verdict);
  }

  /** Drops a verdict that proved wrong: the next launch of that config probes again. */
  forget(key: string): void {
    this.#verdicts.delete(key);
  }

  countProbe(key: string): void {
    this.#probes.set(key, (this.#probes.get(key) ?? 0) + 1);
  }

  probes(key: string): number {
    return this.#probes.get(key) ?? 0;
  }
}

/** The verdict an answer to the probe gives (`'timeout'`: no answer in time). */
export function verdictOf(answer: JSONRPCMessage | 'timeout'): EraVerdict {
  if (answer === 'timeout') return { era: 'legacy' };
  if ('result' in answer) {
    const discover = discoverResultSchema().safeParse(answer.result);
    return discover.success ? { era: 'modern', discover: discover.data, supported: discover.data.supportedVersions } : { era: 'legacy' };
  }
  if ('error' in answer) {
    const modern = unsupportedVersionErrorSchema().safeParse(answer.error);
    if (modern.success) return { era: 'modern', discover: null, supported: modern.data.data.supported };
  }
  return { era: 'legacy' };
}
