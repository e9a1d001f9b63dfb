/**
 * The worker under Node (`ws`): a message over the link's frame limit is refused by `ws` from its
 * header, before the worker reads it, so not even a key holder can make it buffer one before the
 * challenge's proof (Deno has no such option: its own 64 MiB limit applies, see `deno-websocket.ts`;
 * there only a key holder gets a socket at all).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FRAME_BYTES } from '../../shared/frames.ts';
import { hostCredential } from '../support/configs.ts';
import { startInProcessWorker, type InProcessWorker } from '../support/node-worker.ts';
import { RogueLink } from '../resilience/rogue-link.ts';

let worker: InProcessWorker;
const HOST = hostCredential('node-host');

beforeAll(async () => {
  worker = await startInProcessWorker([HOST]);
});

afterAll(async () => {
  await worker?.stop();
});

describe('the Node worker\'s WebSocket limit', () => {
  it('drops a message over the frame limit unread: 1009 from ws, and the link never saw it', async () => {
    const rogue = await RogueLink.dial(worker.url, 'node-host', { key: HOST });
    await rogue.next('link-challenge');
    rogue.send('x'.repeat(MAX_FRAME_BYTES + 2048));
    expect(await rogue.probe()).toMatchObject({ kind: 'closed', code: 1009, linkClose: undefined });
    expect(worker.logs.filter((l) => l.msg === 'Refused a host link')).toEqual([]);
  });
});
