import { describe, expect, it } from 'vitest';
import { sealServerState } from './modern-server-state.ts';
import { MAX_INNER_STATE_LENGTH, RequestStateCodec } from './request-state.ts';

const key = { agent: 'alice', server: 'modern', revision: 'uncontained' };
const inputRequired = (requestState: string) => ({ resultType: 'input_required', inputRequests: {}, requestState });

describe('sealServerState', () => {
  it('seals a server state the host can open again on the retry', async () => {
    const codec = await RequestStateCodec.create();
    const sealed = await sealServerState('tools/call', { name: 'x' }, inputRequired('é'.repeat(1000)), key, codec);
    const state = (sealed as { result: { requestState: string } }).result.requestState;
    expect(await codec.open(state)).toMatchObject({ ok: true, claims: { inner: 'é'.repeat(1000) } });
  });

  it('refuses, when it seals, a state within the bound that sealed would be past what open takes (review s23: the retry was refused as forged)', async () => {
    const codec = await RequestStateCodec.create();
    for (const inner of ['"'.repeat(MAX_INNER_STATE_LENGTH), 'é'.repeat(MAX_INNER_STATE_LENGTH), '\u0001'.repeat(12 * 1024)]) {
      const sealed = await sealServerState('tools/call', {}, inputRequired(inner), key, codec);
      expect(sealed).toMatchObject({ error: { code: -32603, message: expect.stringMatching(/^The server's requestState is too long sealed \(\d+ characters, of at most 65536\): the host does not relay it$/), data: { reason: 'invalid-request' } } });
    }
  });
});
