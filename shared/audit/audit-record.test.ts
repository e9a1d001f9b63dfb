import { describe, expect, it } from 'vitest';
import { AuditLog } from './audit-log.ts';
import { CallLedger } from './call-ledger.ts';
import { outcomeOfAnswer, withoutCredentials } from './audit-record.ts';
import { hostAnswer } from './host-answers.ts';

describe('outcomeOfAnswer', () => {
  it('keeps a stable reason from an answer, and anything else as rpc-error', () => {
    expect(outcomeOfAnswer({ error: { code: -32003, message: 'x', data: { reason: 'host-offline' } } })).toEqual({ decision: 'allowed', outcome: 'error', reason: 'host-offline', errorCode: -32003 });
    expect(outcomeOfAnswer({ error: { code: 1, message: 'x', data: { reason: 'my-own-words' } } })).toEqual({ decision: 'allowed', outcome: 'error', reason: 'rpc-error', errorCode: 1 });
    expect(outcomeOfAnswer({ error: { code: 1, data: { reason: { toString: () => 'host-offline' } } } }).reason).toBe('rpc-error');
    expect(outcomeOfAnswer({ error: { code: 'x', data: null } })).toEqual({ decision: 'allowed', outcome: 'error', reason: 'rpc-error' });
  });

  it('never takes a policy denial as the decision from a peer\'s answer, unless the peer is a host that decides and marked it as its own', () => {
    const denial = () => ({ error: { code: -32010, message: 'x', data: { reason: 'denied-by-policy' } } });
    expect(outcomeOfAnswer({ error: { code: 1, data: { reason: 'denied-by-policy' } } })).toEqual({ decision: 'allowed', outcome: 'error', reason: 'denied-by-policy', errorCode: 1 });
    expect(outcomeOfAnswer(denial())).toMatchObject({ decision: 'allowed', reason: 'denied-by-policy' });
    expect(outcomeOfAnswer(hostAnswer(denial()))).toMatchObject({ decision: 'allowed', reason: 'denied-by-policy' });
    expect(outcomeOfAnswer(hostAnswer(denial()), { peerDecides: true })).toMatchObject({ decision: 'denied-by-policy', reason: 'denied-by-policy', errorCode: -32010 });
    // The same error unmarked, as a server behind the host writes it (or a host that marks nothing): not the host's decision.
    expect(outcomeOfAnswer(denial(), { peerDecides: true })).toEqual({ decision: 'allowed', outcome: 'error', reason: 'denied-by-policy', errorCode: -32010 });
    // Not the shape a host's refusal has: not its decision either.
    expect(outcomeOfAnswer(hostAnswer({ error: { code: -32000, data: { reason: 'denied-by-policy' } } }), { peerDecides: true })).toMatchObject({ decision: 'allowed' });
  });

  it('tells a modern round that asks the agent for input from a result: the call is not over', () => {
    expect(outcomeOfAnswer({ result: { resultType: 'input_required', inputRequests: {}, requestState: 's' } })).toEqual({ decision: 'allowed', outcome: 'input-required' });
    expect(outcomeOfAnswer({ result: { resultType: 'complete', content: [] } })).toEqual({ decision: 'allowed', outcome: 'ok' });
    expect(outcomeOfAnswer({ result: { resultType: 'complete', isError: true } })).toEqual({ decision: 'allowed', outcome: 'error', reason: 'tool-error' });
  });

  it('keeps a huge reason out of the line, the span and the recent calls', () => {
    const lines: string[] = [];
    const records: Array<{ reason?: string; tool?: string }> = [];
    const spans: Array<{ error: string | null; attributes: Record<string, unknown> }> = [];
    const log = new AuditLog({ component: 'sidecar', write: (line) => lines.push(line), onRecord: (r) => void records.push(r), spans: { export: (s) => void spans.push(s) } });
    const ledger = new CallLedger(log, { agent: 'a', server: 's', host: null, parent: null });
    ledger.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x'.repeat(10_000) } });
    ledger.answer({ jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'm', data: { reason: 'R'.repeat(1_000_000) } } });
    ledger.refuse({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'y' } }, 'refused', 'Q'.repeat(1_000_000));
    expect(lines.map((line) => line.length < 1_000)).toEqual([true, true]);
    expect(records.map((r) => [r.reason, r.tool?.length])).toEqual([['rpc-error', 256], ['Q'.repeat(256), 1]]);
    expect(spans.map((s) => [s.error, s.attributes['error.type']])).toEqual([['rpc-error', 'rpc-error'], ['Q'.repeat(256), 'Q'.repeat(256)]]);
  });
});

describe('withoutCredentials', () => {
  it('takes out the fragment, where implicit-flow tokens ride', () => {
    expect(withoutCredentials('https://api.example.com/x#access_token=FRAGSECRET')).toBe('https://api.example.com/x#[redacted]');
  });

  it('takes out all of a password that holds an @', () => {
    expect(withoutCredentials('https://user:p@ssW0RDSECRET@example.com/x')).toBe('https://[redacted]@example.com/x');
  });

  it('takes out userinfo, query and fragment together, and leaves a URI with none of them as written', () => {
    expect(withoutCredentials('https://bob:hunter2@api.example.com/doc?token=abc#part')).toBe('https://[redacted]@api.example.com/doc?[redacted]#[redacted]');
    expect(withoutCredentials('https://API.example.com/a/../b?')).toBe('https://api.example.com/b');
    for (const uri of ['test://static/resource/1', 'file:///home/u/a b.txt', 'https://Example.com', 'https://x.com/@user/post', 'ui://widget']) expect(withoutCredentials(uri)).toBe(uri);
  });

  it('redacts what no URL parser takes, up to the last @ before the path', () => {
    expect(withoutCredentials('https://u:p@ss@exa mple.com/x?k=S#F')).toBe('https://[redacted]@exa mple.com/x?[redacted]#[redacted]');
    expect(withoutCredentials('not a uri ?token=S #frag')).toBe('not a uri ?[redacted]#[redacted]');
  });
});
