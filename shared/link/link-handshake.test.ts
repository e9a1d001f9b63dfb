import { afterEach, describe, expect, it, vi } from 'vitest';
import { WireError } from '../errors.ts';
import { advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';
import { createFrameSocketPair } from './frame-socket.ts';
import { answerChallenge, challengeHost, PRE_AUTH_MAX_FRAME_BYTES, PROOF_TIMEOUT_MS, type ProofVerdict } from './link-handshake.ts';
import { MAX_FRAME_MESSAGE_CHARS } from '../frames.ts';
import { importPublicKey, signLinkProof, verifyLinkProof } from './link-identity.ts';
import { LinkEndpoint } from './link-endpoint.ts';

const ORIGIN = '127.0.0.1:8787';
const ENTITY = 'alice-laptop';

afterEach(() => vi.useRealTimers());

async function hostKey() {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  return { privateKey: pair.privateKey, publicKey: await importPublicKey(new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))) };
}

/** A worker that checks proofs against `known`, and a sidecar that signs with `signer`, over one socket pair. */
async function handshake(options: { signer: CryptoKey; known: CryptoKey; dialled?: string; paced?: boolean; verifyDelayMs?: number }) {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  const frames: Array<{ from: string; frame: Record<string, unknown> }> = [];
  const tap = (from: string, socket: typeof workerSocket) => {
    const send = socket.send.bind(socket);
    socket.send = (text: string) => {
      frames.push({ from, frame: JSON.parse(text) as Record<string, unknown> });
      send(text);
    };
  };
  tap('worker', workerSocket);
  tap('sidecar', sidecarSocket);
  const verify = async (proof: { signature: string }, nonce: string): Promise<ProofVerdict> =>
    (await new Promise((resolve) => setTimeout(resolve, options.verifyDelayMs ?? 0)), await verifyLinkProof(options.known, { origin: ORIGIN, entityId: ENTITY, nonce }, proof.signature)) ? { ok: true } : { ok: false, message: 'The worker does not know this host\'s key' };
  const rtts: (number | undefined)[] = [];
  const workerRtts: (number | undefined)[] = [];
  const worker = challengeHost(workerSocket, {
    verify,
    ...(options.paced ? { paced: true } : {}),
    accept: (_accepted, rttMs) => (workerRtts.push(rttMs), new LinkEndpoint(workerSocket, { role: 'worker', peer: ENTITY })),
  });
  const accepted: unknown[] = [];
  const origin = options.dialled ?? ORIGIN;
  const sidecar = answerChallenge(sidecarSocket, {
    prove: async (nonce) => ({ origin, signature: await signLinkProof(options.signer, { origin, entityId: ENTITY, nonce }) }),
    accept: (frame, rttMs) => {
      accepted.push(frame);
      rtts.push(rttMs);
      return new LinkEndpoint(sidecarSocket, {
        role: 'sidecar',
        onOpen: async (_request, channel) => {
          channel.onmessage = (m) => void channel.send(m);
          void channel.start();
        },
      });
    },
  });
  return { worker, sidecar, frames, workerSocket, sidecarSocket, accepted, rtts, workerRtts };
}

describe('link handshake', () => {
  it('challenges, checks the proof, then hands the socket to the link endpoints', async () => {
    const key = await hostKey();
    const { worker, sidecar, frames } = await handshake({ signer: key.privateKey, known: key.publicKey });
    const [workerEnd, sidecarEnd] = await Promise.all([worker, sidecar]);
    expect(frames.map((f) => `${f.from}:${String(f.frame.type)}`)).toEqual(['worker:link-challenge', 'sidecar:link-proof', 'worker:link-accepted']);
    expect(frames[1]!.frame.origin).toBe(ORIGIN);
    expect(frames[2]!.frame).toEqual({ v: 1, type: 'link-accepted' }); // no `paced` to a host that did not name the feature: its schema refuses the key
    const channel = await workerEnd.openChannel({ type: 'mcp' });
    const reply = new Promise((resolve) => (channel.onmessage = resolve));
    void channel.start();
    await channel.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await reply).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping' });
    workerEnd.close();
    sidecarEnd.close();
  });

  it('tells the host it reads pieces where asked to, and hands the sidecar\'s accept the worker\'s link-accepted', async () => {
    const key = await hostKey();
    const { worker, sidecar, accepted } = await handshake({ signer: key.privateKey, known: key.publicKey, paced: true });
    const ends = await Promise.all([worker, sidecar]);
    expect(accepted).toEqual([{ v: 1, type: 'link-accepted', paced: true }]);
    for (const end of ends) end.close();
  });

  it('hands each end\'s accept its round trip, the link window\'s first: the sidecar\'s from its proof to link-accepted, the worker\'s from its challenge to the proof', async () => {
    const key = await hostKey();
    const { worker, sidecar, rtts, workerRtts } = await handshake({ signer: key.privateKey, known: key.publicKey, verifyDelayMs: 30 });
    const ends = await Promise.all([worker, sidecar]);
    expect(rtts).toHaveLength(1);
    expect(rtts[0]).toBeGreaterThanOrEqual(29); // the worker took 30 ms to verify; timers may fire a hair early
    // The worker's excludes its own verifying: it is the host's signing and the way there and back.
    expect(workerRtts).toEqual([expect.any(Number)]);
    expect(workerRtts[0]).toBeLessThan(rtts[0]!);
    for (const end of ends) end.close();
  });

  it('refuses a proof by another key: unauthorized on both ends, with the worker\'s message, and no endpoint', async () => {
    const [key, other] = [await hostKey(), await hostKey()];
    const { worker, sidecar, frames } = await handshake({ signer: other.privateKey, known: key.publicKey });
    const [w, s] = await Promise.allSettled([worker, sidecar]);
    for (const outcome of [w, s]) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ reason: 'unauthorized', message: 'The worker does not know this host\'s key' });
    }
    expect(frames.at(-1)).toEqual({ from: 'worker', frame: { v: 1, type: 'link-close', reason: 'unauthorized', message: 'The worker does not know this host\'s key' } });
    expect(frames.some((f) => f.frame.type === 'link-accepted')).toBe(false);
  });

  it('refuses a proof for another worker\'s origin (a relayed challenge)', async () => {
    const key = await hostKey();
    const { worker, sidecar } = await handshake({ signer: key.privateKey, known: key.publicKey, dialled: 'rogue.example:8787' });
    await expect(worker).rejects.toMatchObject({ reason: 'unauthorized' });
    await expect(sidecar).rejects.toMatchObject({ reason: 'unauthorized' });
  });

  it('accepts nothing before the proof: a channel frame first ends the link, and accept never runs', async () => {
    const [workerSocket, raw] = createFrameSocketPair();
    const received: Array<Record<string, unknown>> = [];
    raw.onmessage = (text) => received.push(JSON.parse(text) as Record<string, unknown>);
    const accept = vi.fn(() => 'endpoint');
    const worker = challengeHost(workerSocket, { verify: async () => ({ ok: true }), accept });
    raw.send(JSON.stringify({ v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp' } }));
    await expect(worker).rejects.toMatchObject({ reason: 'invalid-request', message: expect.stringContaining('nothing else is accepted before the host is verified') });
    expect(accept).not.toHaveBeenCalled();
    expect(received.map((f) => f.type)).toEqual(['link-challenge', 'link-close']);
  });

  it('refuses a second proof sent while the first is being checked', async () => {
    const [workerSocket, raw] = createFrameSocketPair();
    let release!: (verdict: ProofVerdict) => void;
    const accept = vi.fn(() => 'endpoint');
    const worker = challengeHost(workerSocket, { verify: () => new Promise((resolve) => (release = resolve)), accept });
    const proof = JSON.stringify({ v: 1, type: 'link-proof', origin: ORIGIN, signature: 'A'.repeat(86) });
    raw.send(proof);
    raw.send(proof);
    await expect(worker).rejects.toMatchObject({ reason: 'invalid-request' });
    release({ ok: true });
    expect(accept).not.toHaveBeenCalled();
  });

  it('gives up on a silent peer at the deadline, on either end', async () => {
    useFakeClock();
    const [workerSocket, silentSidecar] = createFrameSocketPair();
    const worker = challengeHost(workerSocket, { verify: async () => ({ ok: true }), accept: () => 1, timeoutMs: 10_000 });
    const outcome = await advanceUntilSettled(worker.catch((e: unknown) => e));
    expect(outcome).toBeInstanceOf(WireError);
    expect(outcome).toMatchObject({ reason: 'request-timeout', message: 'The link handshake did not complete within 10000 ms' });
    expect(silentSidecar.closed).toBe(true);

    const [silentWorker, sidecarSocket] = createFrameSocketPair();
    const sidecar = answerChallenge(sidecarSocket, { prove: async () => ({ origin: ORIGIN, signature: 'A'.repeat(86) }), accept: () => 1 });
    expect(await advanceUntilSettled(sidecar.catch((e: unknown) => e))).toMatchObject({ reason: 'request-timeout' });
    expect(silentWorker.closed).toBe(true);
  });

  it('waits for the proof 5 s by default on the worker\'s end, and still 10 s on the sidecar\'s', async () => {
    useFakeClock();
    const [workerSocket] = createFrameSocketPair();
    const worker = challengeHost(workerSocket, { verify: async () => ({ ok: true }), accept: () => 1 });
    expect(await advanceUntilSettled(worker.catch((e: unknown) => e))).toMatchObject({ reason: 'request-timeout', message: `The link handshake did not complete within ${PROOF_TIMEOUT_MS} ms` });
    expect(PROOF_TIMEOUT_MS).toBe(5_000);
    const [, sidecarSocket] = createFrameSocketPair();
    const sidecar = answerChallenge(sidecarSocket, { prove: async () => ({ origin: ORIGIN, signature: 'A'.repeat(86) }), accept: () => 1 });
    expect(await advanceUntilSettled(sidecar.catch((e: unknown) => e))).toMatchObject({ message: 'The link handshake did not complete within 10000 ms' });
  });

  it('refuses, before parsing it, a frame over 8 KiB from a host not yet verified, closing with 1009', async () => {
    const [workerSocket, raw] = createFrameSocketPair();
    const received: Array<Record<string, unknown>> = [];
    raw.onmessage = (text) => received.push(JSON.parse(text) as Record<string, unknown>);
    const closed = new Promise((resolve) => (raw.onclose = resolve));
    const accept = vi.fn(() => 'endpoint');
    const verify = vi.fn(async (): Promise<ProofVerdict> => ({ ok: true }));
    const worker = challengeHost(workerSocket, { verify, accept });
    // A proof that would be refused as malformed once parsed: the size alone refuses it first.
    raw.send(JSON.stringify({ v: 1, type: 'link-proof', origin: 'o'.repeat(1024 * 1024), signature: 'A'.repeat(86) }));
    await expect(worker).rejects.toMatchObject({ reason: 'invalid-request', message: `Incoming link frame exceeds the ${PRE_AUTH_MAX_FRAME_BYTES} byte limit before the host is verified` });
    expect(await closed).toMatchObject({ code: 1009 });
    expect(received.map((f) => f.type)).toEqual(['link-challenge', 'link-close']);
    expect(verify).not.toHaveBeenCalled();
    expect(accept).not.toHaveBeenCalled();
  });

  it('takes the largest frames an honest host sends before it is verified: a proof for a 300-character origin, a clipped link-close', async () => {
    const proof = JSON.stringify({ v: 1, type: 'link-proof', origin: 'o'.repeat(300), signature: 'A'.repeat(86) });
    const close = JSON.stringify({ v: 1, type: 'link-close', reason: 'invalid-request', message: '€'.repeat(MAX_FRAME_MESSAGE_CHARS) });
    expect(new TextEncoder().encode(proof).byteLength).toBeLessThan(450);
    expect(new TextEncoder().encode(close).byteLength).toBeLessThanOrEqual(PRE_AUTH_MAX_FRAME_BYTES);
    const [workerSocket, raw] = createFrameSocketPair();
    const worker = challengeHost(workerSocket, { verify: async () => ({ ok: false, message: 'Not this key' }), accept: () => 1 });
    raw.send(proof);
    await expect(worker).rejects.toMatchObject({ reason: 'unauthorized', message: 'Not this key' });
    const [otherWorker, otherRaw] = createFrameSocketPair();
    const ended = challengeHost(otherWorker, { verify: async () => ({ ok: true }), accept: () => 1 });
    otherRaw.send(close);
    await expect(ended).rejects.toMatchObject({ reason: 'invalid-request', message: '€'.repeat(MAX_FRAME_MESSAGE_CHARS) });
  });

  it('refuses a malformed handshake frame through the shared frame reader', async () => {
    const [silentWorker, sidecarSocket] = createFrameSocketPair();
    const sidecar = answerChallenge(sidecarSocket, { prove: async () => ({ origin: ORIGIN, signature: 'A'.repeat(86) }), accept: () => 1 });
    silentWorker.send(JSON.stringify({ v: 1, type: 'link-challenge', nonce: 'short' }));
    await expect(sidecar).rejects.toMatchObject({ reason: 'invalid-request', message: expect.stringMatching(/^Malformed handshake frame: nonce: must be 32 bytes/) });
  });
});
