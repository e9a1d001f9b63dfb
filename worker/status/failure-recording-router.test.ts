import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../shared/errors.ts';
import { createInMemoryChannelPair, type MessageChannel } from '../../shared/message-channel.ts';
import { connectionFor, openChannel, type ChannelRouter } from '../routing/channel-router.ts';
import type { AgentEntry } from '../config/worker-config.ts';
import { recordRouterFailures } from './failure-recording-router.ts';
import { RecentErrors } from './recent-errors.ts';

const alice = { name: 'alice', 'token-sha256': '0'.repeat(64), servers: ['files'] } as AgentEntry;
const descriptor = { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } } as const;
const ping: JSONRPCMessage = { jsonrpc: '2.0', id: 1, method: 'ping' };

/** A router whose opens fail with `failure`, or hand out the worker end of a fresh in-memory pair. */
function fakeRouter(failure?: unknown): ChannelRouter & { serverEnds: MessageChannel[] } {
  const serverEnds: MessageChannel[] = [];
  return {
    serverEnds,
    async open() {
      if (failure !== undefined) throw failure;
      const [worker, server] = createInMemoryChannelPair();
      server.start();
      serverEnds.push(server);
      return worker;
    },
  };
}

const open = (router: ChannelRouter, timeoutMs = 5_000) => openChannel(router, descriptor, connectionFor(alice, 'files', 'session-1'), {}, timeoutMs);

describe('recordRouterFailures', () => {
  it('records a refused open with its reason, server and agent, and still rejects with it', async () => {
    const errors = new RecentErrors();
    const refusal = new WireError('host-offline', 'Host "laptop" is offline');
    await expect(open(recordRouterFailures(fakeRouter(refusal), errors))).rejects.toBe(refusal);
    expect(errors.list()).toEqual([expect.objectContaining({ reason: 'host-offline', server: 'files', agent: 'alice', message: 'Host "laptop" is offline', count: 1 })]);
  });

  it('records an unexpected error as launch-failed, as the agent is answered', async () => {
    const errors = new RecentErrors();
    await expect(open(recordRouterFailures(fakeRouter(new TypeError('boom')), errors))).rejects.toMatchObject({ reason: 'launch-failed' });
    expect(errors.list()[0]).toMatchObject({ reason: 'launch-failed', message: 'Could not open server "files": boom' });
  });

  it('records an open that outlived its time as request-timeout', async () => {
    const errors = new RecentErrors();
    const never: ChannelRouter = { open: () => new Promise<never>(() => {}) };
    await expect(open(recordRouterFailures(never, errors), 1)).rejects.toMatchObject({ reason: 'request-timeout' });
    expect(errors.list()[0]).toMatchObject({ reason: 'request-timeout', server: 'files', agent: 'alice' });
  });

  it('passes messages through both ways and records a channel that ends with a failure reason', async () => {
    const errors = new RecentErrors();
    const inner = fakeRouter();
    const channel = await open(recordRouterFailures(inner, errors));
    const received: JSONRPCMessage[] = [];
    const closed = new Promise((resolve) => (channel.onclose = resolve));
    channel.onmessage = (message) => received.push(message);
    channel.start();
    const atServer = new Promise((resolve) => (inner.serverEnds[0]!.onmessage = resolve));
    await channel.send(ping);
    expect(await atServer).toEqual(ping);
    await inner.serverEnds[0]!.send({ jsonrpc: '2.0', id: 1, result: {} });
    await inner.serverEnds[0]!.close({ reason: 'server-exited', message: 'Server "files" exited with code 1' });
    expect(await closed).toEqual({ reason: 'server-exited', message: 'Server "files" exited with code 1' });
    expect(received).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(channel.closed).toBe(true);
    expect(errors.list()).toEqual([expect.objectContaining({ reason: 'server-exited', server: 'files', agent: 'alice', message: 'Server "files" exited with code 1' })]);
  });

  it('does not record an orderly close from either side', async () => {
    const errors = new RecentErrors();
    const inner = fakeRouter();
    const ours = await open(recordRouterFailures(inner, errors));
    ours.start();
    await ours.close();
    const theirs = await open(recordRouterFailures(inner, errors));
    const closed = new Promise((resolve) => (theirs.onclose = resolve));
    theirs.start();
    await inner.serverEnds[1]!.close();
    await closed;
    expect(errors.size).toBe(0);
  });

  it('keeps the wrapped router\'s own observer informed', async () => {
    const seen: string[] = [];
    const inner: ChannelRouter = { ...fakeRouter(new WireError('host-offline', 'offline')), onOpenFailed: (_c, e) => seen.push(e.reason) };
    await open(recordRouterFailures(inner, new RecentErrors())).catch(() => {});
    expect(seen).toEqual(['host-offline']);
  });
});
