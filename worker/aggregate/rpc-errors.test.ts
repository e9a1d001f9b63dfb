import { describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { toAgentError, toUpstreamError, type UpstreamFailure } from './rpc-errors.ts';
import { ConnectionClosedError, RequestCancelledError, RequestTimeoutError, RpcError } from './rpc/peer-errors.ts';

const exited: UpstreamFailure = { reason: 'server-exited', message: 'exit code 1' };
const none = () => undefined;

describe('toAgentError', () => {
  it('passes an upstream JSON-RPC error through unchanged, whatever its code', () => {
    const answer = new RpcError(-32001, 'Request timed out', { timeout: 5 });
    expect(toAgentError('a', answer, () => exited)).toBe(answer);
  });

  it('turns Switchyard\'s own failures into their reason', () => {
    expect(toAgentError('a', new RequestTimeoutError(250), none)).toMatchObject({ code: -32011, message: 'Server "a" did not answer within 250 ms', data: { reason: 'request-timeout' } });
    expect(toAgentError('a', new WireError('host-offline', 'offline'), none)).toMatchObject({ code: -32003, data: { reason: 'host-offline' } });
    expect(toAgentError('a', new ConnectionClosedError(), () => exited)).toMatchObject({ code: -32009, message: 'Server "a" disconnected: exit code 1', data: { reason: 'server-exited' } });
    expect(toAgentError('a', new Error('odd'), () => ({ reason: 'host-offline', message: 'gone' }))).toMatchObject({ code: -32003, message: 'Server "a" could not answer: gone' });
    expect(toAgentError('a', new Error('odd'), none)).toMatchObject({ code: -32009, data: { reason: 'server-exited' } });
  });

  it('keeps the SDK\'s codes where no failure is known: -32000 for a close, -32001 for a cancellation', () => {
    expect(toAgentError('a', new ConnectionClosedError(), none)).toEqual(new RpcError(-32000, 'Connection closed'));
    expect(toAgentError('a', new RequestCancelledError('gave up'), none)).toEqual(new RpcError(-32001, 'gave up'));
  });
});

describe('toUpstreamError', () => {
  it('answers an upstream as the SDK did when the agent does not answer', () => {
    expect(toUpstreamError(new RequestTimeoutError(9))).toMatchObject({ code: -32001, message: 'Request timed out', data: { timeout: 9 } });
    expect(toUpstreamError(new ConnectionClosedError('Request was cancelled'))).toMatchObject({ code: -32000, message: 'Request was cancelled' });
    const agents = new RpcError(-1, 'User rejected');
    expect(toUpstreamError(agents)).toBe(agents);
  });
});
