/** A modern channel on the host, seen from the worker's end of an in-memory channel pair. */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { isHostAnswer } from '../../../shared/audit/host-answers.ts';
import { createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { isFailureReason } from '../../../shared/errors.ts';
import { silentLogger } from '../../log.ts';
import { serveModernChannel } from './modern-channel.ts';

describe('serveModernChannel', () => {
  it('answers a method it does not forward (a worker of another version sent it) with -32601 and a stable reason, as its own answer', async () => {
    const [worker, host] = createInMemoryChannelPair();
    const answered = new Promise<JSONRPCMessage>((resolve) => {
      worker.onmessage = resolve;
    });
    await worker.start();
    let started = false;
    serveModernChannel(host, { server: 'everything', log: silentLogger, instance: () => ((started = true), new Promise(() => {})) });
    await worker.send({ jsonrpc: '2.0', id: 7, method: 'tasks/list', params: {} });
    const answer = (await answered) as { id: number; error: { code: number; message: string; data?: { reason?: unknown } } };
    expect(answer).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found: tasks/list', data: { reason: 'invalid-request' } } });
    expect(isFailureReason(answer.error.data?.reason)).toBe(true);
    expect(isHostAnswer(answer)).toBe(true);
    expect(started).toBe(false);
  });
});
