import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { LegacyAgentRounds, MAX_ROUNDS } from './legacy-agent-rounds.ts';
import { isHostAnswer } from '../audit/host-answers.ts';

function rig(capabilities: Record<string, unknown> = { elicitation: {} }) {
  const toAgent: Array<Record<string, any>> = [];
  const toServer: Array<Record<string, any>> = [];
  const rounds = new LegacyAgentRounds({ toAgent: (m) => toAgent.push(m), toServer: (m) => toServer.push(m), capabilities: () => capabilities });
  return { rounds, toAgent, toServer };
}
const ask = (id: string | number, state?: string) => ({
  jsonrpc: '2.0', id, result: { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create', params: { message: 'Who?' } } }, ...(state ? { requestState: state } : {}) },
}) as JSONRPCMessage;

describe('LegacyAgentRounds', () => {
  it('puts each input request to the agent, retries with its answers and the state, and answers under the agent\'s id', () => {
    const { rounds, toAgent, toServer } = rig();
    rounds.track({ id: 5, method: 'tools/call', params: { name: 'ask', arguments: {} } });
    expect(rounds.fromServer(ask(5, 's1'))).toBe(true);
    expect(toAgent).toEqual([{ jsonrpc: '2.0', id: expect.stringMatching(/^switchyard-input-/), method: 'elicitation/create', params: { message: 'Who?' } }]);
    expect(rounds.fromAgent({ jsonrpc: '2.0', id: toAgent[0]!.id, result: { action: 'accept', content: { n: 'Ada' } } } as JSONRPCMessage)).toBe(true);
    expect(toServer).toEqual([{ jsonrpc: '2.0', id: expect.stringMatching(/^switchyard-retry-/), method: 'tools/call', params: { name: 'ask', arguments: {}, inputResponses: { who: { action: 'accept', content: { n: 'Ada' } } }, requestState: 's1' } }]);
    expect(rounds.fromServer({ jsonrpc: '2.0', id: toServer[0]!.id, result: { content: [] } } as JSONRPCMessage)).toBe(true);
    expect(toAgent.at(-1)).toEqual({ jsonrpc: '2.0', id: 5, result: { content: [] } });
    expect(rounds.fromServer({ jsonrpc: '2.0', id: 6, result: {} } as JSONRPCMessage)).toBe(false);
  });

  it(`stops after ${MAX_ROUNDS} rounds`, () => {
    const { rounds, toAgent, toServer } = rig();
    rounds.track({ id: 'x', method: 'prompts/get', params: { name: 'p' } });
    let upstream: string | number = 'x';
    for (let round = 0; round < MAX_ROUNDS; round++) {
      rounds.fromServer(ask(upstream));
      rounds.fromAgent({ jsonrpc: '2.0', id: toAgent.at(-1)!.id, result: { action: 'decline' } } as JSONRPCMessage);
      upstream = toServer.at(-1)!.id;
    }
    rounds.fromServer(ask(upstream));
    expect(toAgent.at(-1)).toMatchObject({ id: 'x', error: { code: -32603, message: expect.stringContaining(`more than ${MAX_ROUNDS}`), data: { reason: 'invalid-request' } } });
  });

  it('fails with -32021 when the agent did not declare the kind, and with the agent\'s own error', () => {
    const none = rig({});
    none.rounds.track({ id: 1, method: 'tools/call' });
    none.rounds.fromServer(ask(1));
    // The host's own refusal, with a reason and marked as the host's (review s20).
    expect(none.toAgent).toEqual([{ jsonrpc: '2.0', id: 1, error: { code: -32021, message: expect.stringContaining('elicitation'), data: { requiredCapabilities: { elicitation: {} }, reason: 'invalid-request' } } }]);
    expect(isHostAnswer(none.toAgent[0]!)).toBe(true);
    const refused = rig();
    refused.rounds.track({ id: 2, method: 'tools/call' });
    refused.rounds.fromServer(ask(2));
    refused.rounds.fromAgent({ jsonrpc: '2.0', id: refused.toAgent[0]!.id, error: { code: -1, message: 'no' } } as JSONRPCMessage);
    expect(refused.toAgent.at(-1)).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -1, message: 'no' } });
  });

  it('sends the agent\'s cancellation to the round in flight upstream', () => {
    const { rounds, toAgent, toServer } = rig();
    rounds.track({ id: 3, method: 'tools/call' });
    rounds.fromServer(ask(3));
    rounds.fromAgent({ jsonrpc: '2.0', id: toAgent[0]!.id, result: { action: 'accept' } } as JSONRPCMessage);
    const retry = toServer[0]!.id;
    expect(rounds.fromAgent({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3, reason: 'bye' } } as JSONRPCMessage)).toBe(true);
    expect(toServer.at(-1)).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: retry, reason: 'bye' } });
    expect(rounds.fromServer({ jsonrpc: '2.0', id: retry, result: {} } as JSONRPCMessage)).toBe(false);
  });
});
