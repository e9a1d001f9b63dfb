/**
 * Which era a stdio server speaks, learnt by the spec's stdio probe (basic/transports/stdio.mdx,
 * "Backward Compatibility") and remembered per server config.
 *
 * - The probe is `server/discover` with the modern `_meta`, sent first on a freshly launched
 *   process. A `DiscoverResult`, or a recognised modern error (-32022 naming `data.supported`),
 *   means modern. Any other error means legacy, and the same process is initialized next:
 *   server-everything, filesystem and memory answer -32601 and stay usable (notes §6). The
 *   verdict is never keyed to one error code, as the spec requires.
 * - No answer within a short timeout is tried as legacy, but kept as no verdict: a modern server
 *   still starting is silent too. Its `initialize` decides: answered, legacy; refused after a late
 *   `DiscoverResult`, modern (`server-instance.ts`).
 * - The probe's id is a string, so a late answer after a timeout is one no instance waits for
 *   (both instances number their own requests).
 * - The verdict is a property of the server config, not of one request: it is cached under the
 *   server's name and a fingerprint of command, args, env and cwd, so a changed entry probes
 *   again; the owner forgets a verdict when it later proves wrong.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../../shared/errors.ts';
import { holdReadingOf, type ReadHold } from '../../../shared/link/link-flow.ts';
import type { StdioServerConfig } from '../server-config.ts';
import { MODERN_PROTOCOL_VERSION, type Implementation } from './modern-results.ts';
import { verdictOf, type EraVerdict } from '../../../shared/era-bridge/discover-verdict.ts';

/** The cache key of a server config: its name and what launching it depends on. */
export function serverEraKey(name: string, config: Pick<StdioServerConfig, 'command' | 'args' | 'env' | 'cwd'>): string {
  const env = Object.entries(config.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([config.command, config.args, env, config.cwd ?? null]))
    .digest('hex')
    .slice(0, 32);
  return `${name}#${fingerprint}`;
}

export interface ProbeOptions {
  timeoutMs: number;
  clientInfo: Implementation;
}

export type ProbeOutcome =
  /** The process answered and is still running: hand `transport` on. */
  | { verdict: EraVerdict; transport: StartedTransport; timedOut?: undefined }
  /**
   * No answer in time, the process still running: tried as legacy (`initialize` next), but no
   * verdict to keep, since a server still starting (a cold `npx`, a heavy runtime) is silent too.
   * `late()` is the verdict of an answer that came since; `withdraw()` cancels the probe once
   * the server proved legacy, so it is not counted in flight for good.
   */
  | { verdict: { era: 'legacy' }; transport: StartedTransport; timedOut: true; late(): EraVerdict | null; withdraw(): void }
  /** The process ended during the probe: legacy by the spec's rule, on a fresh process. */
  | { verdict: { era: 'legacy' }; transport: null; failure: WireError | null };

/**
 * A transport already started by the probe, handed to an instance: its `start()` is a no-op, and
 * messages, errors and the close that arrive after the hand-over reach the instance's handlers;
 * holding it holds the process's output (`shared/link/link-flow.ts`).
 */
export type StartedTransport = Transport & { readonly pid?: number | undefined };

/**
 * Probes `transport` (not yet started): starts it and sends `server/discover`. A start that
 * throws is the caller's error, not a verdict; a process that ends before answering is legacy.
 */
export async function probeServerEra(transport: Transport & { readonly pid?: number | undefined }, options: ProbeOptions): Promise<ProbeOutcome> {
  const handoff = handOver(transport);
  let failure: WireError | null = null;
  let closedEarly = false;
  handoff.during({ message: () => {}, error: (error) => error instanceof WireError && (failure = error), close: () => (closedEarly = true) });
  await transport.start(); // a launch that fails is no verdict: its error is the caller's
  if (closedEarly) return { verdict: { era: 'legacy' }, transport: null, failure };
  const answer = await new Promise<JSONRPCMessage | 'timeout' | 'closed'>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), options.timeoutMs);
    const done = (value: JSONRPCMessage | 'timeout' | 'closed') => {
      clearTimeout(timer);
      resolve(value);
    };
    handoff.during({
      message: (message) => {
        if (isProbeAnswer(message)) done(message);
      },
      error: (error) => {
        if (error instanceof WireError) failure = error;
      },
      close: () => done('closed'),
    });
    transport
      .send({
        jsonrpc: '2.0',
        id: PROBE_ID,
        method: 'server/discover',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': options.clientInfo,
          },
        },
      })
      .catch((error: unknown) => {
        if (error instanceof WireError) failure = error;
        done('closed');
      });
  });
  if (answer === 'closed') return { verdict: { era: 'legacy' }, transport: null, failure };
  if (answer !== 'timeout') return { verdict: verdictOf(answer), transport: handoff.started };
  let late: EraVerdict | null = null;
  // A late answer still comes here, not to the instance, which has its own ids.
  handoff.during({ message: (message) => void (isProbeAnswer(message) && (late = verdictOf(message))), error: () => {}, close: () => {} });
  return {
    verdict: { era: 'legacy' },
    transport: handoff.started,
    timedOut: true,
    late: () => late,
    // Withdrawn, as any unanswered request is: counted in flight, the probe would keep the
    // process busy for good, and the budget could never end it to make room.
    withdraw: () => {
      if (late !== null) return;
      void transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: PROBE_ID, reason: 'No answer to server/discover in time: the server answered initialize' } }).catch(() => {});
    },
  };
}

/** The probe's id: a string, which no instance numbering its own requests uses. */
const PROBE_ID = 'switchyard-era-probe';

function isProbeAnswer(message: JSONRPCMessage): boolean {
  return 'id' in message && message.id === PROBE_ID && !('method' in message);
}

interface Handlers {
  message(message: JSONRPCMessage): void;
  error(error: Error): void;
  close(): void;
}

/** Routes the transport's events to the probe, then (once the instance starts it) to the instance. */
function handOver(transport: Transport & { readonly pid?: number | undefined }): { during(handlers: Handlers): void; started: StartedTransport } {
  let probe: Handlers | null = null;
  let handedOver = false;
  let closedEarly = false; // between the probe's answer and the hand-over
  const started: StartedTransport & ReadHold = {
    get pid() {
      return transport.pid;
    },
    start: async () => {
      handedOver = true;
      if (closedEarly) queueMicrotask(() => started.onclose?.());
    },
    send: (message, options) => transport.send(message, options),
    close: () => transport.close(),
    holdReading: () => holdReadingOf(transport),
  };
  transport.onmessage = (message) => (handedOver && !isProbeAnswer(message) ? started.onmessage?.(message) : probe?.message(message));
  transport.onerror = (error) => (handedOver ? started.onerror?.(error) : probe?.error(error));
  transport.onclose = () => {
    if (handedOver) return started.onclose?.();
    closedEarly = true;
    probe?.close();
  };
  return {
    during: (handlers) => (probe = handlers),
    started,
  };
}
