/** The modern relay's one timer: the deadline, and the agent's abort read only for a slow answer. */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { relayModernRequest } from './modern-relay.ts';

const request = { jsonrpc: '2.0' as const, id: 1, method: 'tools/list' };

async function hostEnd() {
  const [channel, host] = createInMemoryChannelPair();
  const received = new Promise<JSONRPCMessage>((resolve) => {
    host.onmessage = resolve;
  });
  const closed = new Promise<void>((resolve) => {
    host.onclose = resolve;
  });
  await host.start();
  return { channel, host, received, closed };
}

describe('relayModernRequest', () => {
  it('does not read the agent signal for an answer that comes before the watch', async () => {
    const { channel, host, received } = await hostEnd();
    let reads = 0;
    const answered = relayModernRequest(channel, request, { signal: () => (reads++, new AbortController().signal) });
    await received;
    await host.send({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    expect(await (await answered).json()).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    expect(reads).toBe(0);
  });

  it('sees an agent that left before the watch, and closes the channel', async () => {
    const { channel, received, closed } = await hostEnd();
    const abort = new AbortController();
    const told: unknown[] = [];
    const answered = relayModernRequest(channel, request, { signal: () => abort.signal, onAnswer: (m) => told.push(m) });
    await received;
    abort.abort();
    await closed;
    expect((await answered).status).toBe(499);
    expect(told).toEqual([null]);
  });

  it('answers request-timeout at the deadline, the abort watch armed or not', async () => {
    for (const signal of [undefined, () => new AbortController().signal]) {
      const { channel, closed } = await hostEnd();
      const response = await relayModernRequest(channel, request, { timeoutMs: 5, ...(signal !== undefined ? { signal } : {}) });
      expect(await response.json()).toMatchObject({ id: 1, error: { data: { reason: 'request-timeout' } } });
      await closed;
    }
  });
});
