import { describe, expect, it } from 'vitest';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createInMemoryChannelPair, type ChannelTransport } from '../../shared/channel-transport.ts';
import { WireError } from '../../shared/errors.ts';
import type { AgentEntry } from '../config/worker-config.ts';
import { RecentErrors } from '../status/recent-errors.ts';
import { createChannelOpener } from './channel-opener.ts';
import { connectionFor, type ChannelOpenOptions, type ChannelRouter } from './channel-router.ts';

const alice = { name: 'alice', 'token-sha256': '0'.repeat(64), servers: ['files'] } as AgentEntry;
const descriptor = { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } } as const;

/** A router whose opens fail with `failure`, or hand out the worker end of a fresh in-memory pair. */
function fakeRouter(failure?: unknown): ChannelRouter & { workerEnds: ChannelTransport[] } {
  const workerEnds: ChannelTransport[] = [];
  return {
    workerEnds,
    async open() {
      if (failure !== undefined) throw failure;
      const [worker] = createInMemoryChannelPair();
      workerEnds.push(worker);
      return worker;
    },
  };
}

function opener(router: ChannelRouter, errors: RecentErrors, timeoutMs = 5_000) {
  const open = createChannelOpener(router, {
    timeoutMs,
    onOpenFailed: (connection, error) =>
      errors.record({ reason: error.reason, server: connection['server-name'], agent: connection.agent ?? null, message: error.message }),
  });
  return () => open(descriptor, connectionFor(alice, 'files', 'session-1'), {});
}

describe('createChannelOpener', () => {
  it('hands out the router\'s channel itself and records nothing for a good open', async () => {
    const errors = new RecentErrors();
    const router = fakeRouter();
    expect(await opener(router, errors)()).toBe(router.workerEnds[0]);
    expect(errors.size).toBe(0);
  });

  it('records a refused open with its reason, server and agent, and still rejects with it', async () => {
    const errors = new RecentErrors();
    const refusal = new WireError('host-offline', 'Host "laptop" is offline');
    await expect(opener(fakeRouter(refusal), errors)()).rejects.toBe(refusal);
    expect(errors.list()).toEqual([expect.objectContaining({ reason: 'host-offline', server: 'files', agent: 'alice', message: 'Host "laptop" is offline', count: 1 })]);
  });

  it('records an unexpected error as launch-failed, as the agent is answered', async () => {
    const errors = new RecentErrors();
    await expect(opener(fakeRouter(new TypeError('boom')), errors)()).rejects.toMatchObject({ reason: 'launch-failed' });
    expect(errors.list()[0]).toMatchObject({ reason: 'launch-failed', message: 'Could not open server "files": boom' });
  });

  it('treats a router that throws before returning its promise like one that rejects, and cancels its deadline', async () => {
    const errors = new RecentErrors();
    const throwsAtOnce: ChannelRouter = {
      open() {
        throw new TypeError('no promise');
      },
    };
    await expect(opener(throwsAtOnce, errors, 1)()).rejects.toMatchObject({ reason: 'launch-failed' });
    expect(errors.list()[0]).toMatchObject({ reason: 'launch-failed', message: 'Could not open server "files": no promise' });
  });

  it('records an open that outlived its time as request-timeout', async () => {
    const errors = new RecentErrors();
    const never: ChannelRouter = { open: () => new Promise<never>(() => {}) };
    await expect(opener(never, errors, 1)()).rejects.toMatchObject({ reason: 'request-timeout' });
    expect(errors.list()[0]).toMatchObject({ reason: 'request-timeout', server: 'files', agent: 'alice' });
  });

  it('passes its one deadline down to the router, which gives up with the same error', async () => {
    const errors = new RecentErrors();
    let given: AbortSignal | undefined;
    const honouring: ChannelRouter = {
      open: (_d, _c, _t, options?: ChannelOpenOptions) =>
        new Promise<Transport>((_, reject) => {
          given = options?.signal;
          given?.addEventListener('abort', () => reject(given?.reason));
        }),
    };
    const rejection = await opener(honouring, errors, 1)().catch((e: unknown) => e);
    expect(rejection).toBeInstanceOf(WireError);
    expect(given?.reason).toBe(rejection);
    expect(rejection).toMatchObject({ reason: 'request-timeout', message: 'Opening server "files" took longer than 0 s: check its host and try again' });
    expect(errors.size).toBe(1);
  });

  it('closes a channel that arrives after the deadline', async () => {
    const [late, peer] = createInMemoryChannelPair();
    let arrive!: (channel: Transport) => void;
    const slow: ChannelRouter = { open: () => new Promise<Transport>((resolve) => (arrive = resolve)) };
    await expect(opener(slow, new RecentErrors(), 1)()).rejects.toMatchObject({ reason: 'request-timeout' });
    const peerClosed = new Promise<void>((resolve) => (peer.onclose = resolve));
    await peer.start();
    arrive(late);
    await peerClosed;
    expect(late.closed).toBe(true);
  });
});
