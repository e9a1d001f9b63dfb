/**
 * Multi Round-Trip Requests bridged from a legacy server, through the real stack (the worker
 * under Deno, the sidecar CLI, server-everything from npm): a question the server asks mid-call
 * (elicitation, sampling) reaches the modern agent as an `InputRequiredResult`; its retry, a new
 * HTTP request with `inputResponses` and the `requestState` echo, resumes the very call that asked,
 * and gets the tool's real result. The state is the host's: tampered, replayed or another agent's,
 * it is refused, and the pending call keeps waiting for the right retry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost, type ModernAnswer } from './modern-client.ts';

let stack: Stack;
const url = () => `${stack.url}/servers/everything/mcp`;
const caps = (capabilities: Record<string, unknown>) => ({ meta: { 'io.modelcontextprotocol/clientCapabilities': capabilities } });
const ELICIT = { elicitation: {} };
const elicit = (agent: 'alice' | 'bob', extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = ELICIT) =>
  modernPost(url(), stack.tokens[agent]!, 'tools/call', { name: 'trigger-elicitation-request', arguments: {}, ...extra }, caps(capabilities));
const textOf = (answer: ModernAnswer): string => (answer.response.result?.content as Array<{ text: string }> | undefined)?.map((c) => c.text).join('\n') ?? '';

/** The one input request of an InputRequiredResult, with its key and the state to echo. */
function inputRequired(answer: ModernAnswer): { key: string; request: { method: string; params: Record<string, any> }; state: string } {
  const result = answer.response.result;
  expect(result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
  expect(result).not.toHaveProperty('ttlMs');
  const entries = Object.entries(result.inputRequests as Record<string, { method: string; params: Record<string, any> }>);
  expect(entries).toHaveLength(1);
  const [key, request] = entries[0]!;
  return { key, request, state: result.requestState };
}

const accept = (name: string) => ({ action: 'accept', content: { name, check: true } });

beforeAll(async () => {
  stack = await startStack({ servers: { everything: everythingServer() }, agents: [{ name: 'bob', servers: ['everything'] }] });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('a modern agent answering a legacy server through InputRequiredResult', () => {
  it('sees the tools that ask their client: the host declared elicitation and sampling for it', async () => {
    const list = await modernPost(url(), stack.tokens.alice!, 'tools/list');
    const names = (list.response.result.tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['trigger-elicitation-request', 'trigger-sampling-request']));
  });

  it('gets an InputRequiredResult for an elicitation, retries with the answer, and gets the tool\'s real result', async () => {
    const first = await elicit('alice');
    expect(first.status).toBe(200);
    const { key, request, state } = inputRequired(first);
    expect(request.method).toBe('elicitation/create');
    expect(request.params).toMatchObject({ message: expect.any(String), requestedSchema: { type: 'object', properties: { name: expect.any(Object) } } });
    const retry = await elicit('alice', { inputResponses: { [key]: accept('Ada Lovelace') }, requestState: state });
    expect(retry.response.result.resultType).toBe('complete');
    expect(textOf(retry)).toContain('Name: Ada Lovelace');
    expect(textOf(retry)).toContain('Agreed to terms: true');

    const replay = await elicit('alice', { inputResponses: { [key]: accept('Mallory') }, requestState: state });
    expect(replay.response).toMatchObject({ id: expect.anything(), error: { code: -32602, data: { reason: 'invalid-request', requestState: 'gone' } } });
  });

  it('records the round that asks as input-required, not ok, and the retry that ends the call as ok, on both sides', async () => {
    const traced = (n: number) => ({ headers: { traceparent: `00-${'ab'.repeat(15)}${String(n).padStart(2, '0')}-00f067aa0ba902b7-01` } });
    const traceOf = (n: number) => traced(n).headers.traceparent.split('-')[1];
    const first = await modernPost(url(), stack.tokens.alice!, 'tools/call', { name: 'trigger-elicitation-request', arguments: {} }, { ...caps(ELICIT), ...traced(1) });
    const { key, state } = inputRequired(first);
    const retry = await modernPost(url(), stack.tokens.alice!, 'tools/call', { name: 'trigger-elicitation-request', arguments: {}, inputResponses: { [key]: accept('Ada') }, requestState: state }, { ...caps(ELICIT), ...traced(2) });
    expect(retry.response.result.resultType).toBe('complete');
    for (const log of [stack.worker.err, stack.sidecar.err]) {
      const lineOf = async (n: number) => (await log.waitFor((l) => l.json.msg === 'audit' && l.json.traceId === traceOf(n), `audit line of round ${n}`, { timeoutMs: 20_000 })).json;
      expect(await lineOf(1)).toMatchObject({ level: 'info', agent: 'alice', tool: 'trigger-elicitation-request', era: 'modern', decision: 'allowed', outcome: 'input-required' });
      expect(await lineOf(2)).toMatchObject({ level: 'info', agent: 'alice', tool: 'trigger-elicitation-request', era: 'modern', decision: 'allowed', outcome: 'ok' });
    }
    expect((await stack.worker.err.waitFor((l) => l.json.msg === 'audit' && l.json.traceId === traceOf(1), 'worker line')).json.route).toBe('passthrough');
  });

  it('refuses a tampered requestState, and the pending call still takes the right one', async () => {
    const { key, state } = inputRequired(await elicit('alice'));
    const tampered = await elicit('alice', { inputResponses: { [key]: accept('Eve') }, requestState: `${state}-TAMPERED` });
    expect(tampered.response.error).toMatchObject({ code: -32602, message: expect.stringContaining('integrity check'), data: { reason: 'invalid-request', requestState: 'invalid' } });
    expect(tampered.response.result).toBeUndefined();
    const right = await elicit('alice', { inputResponses: { [key]: { action: 'decline' } }, requestState: state });
    expect(textOf(right)).toContain('User declined');
  });

  it("does not let one agent's state resume another agent's call", async () => {
    const { key, state } = inputRequired(await elicit('alice'));
    const stolen = await elicit('bob', { inputResponses: { [key]: accept('Bob') }, requestState: state });
    expect(stolen.response.error).toMatchObject({ code: -32602, data: { reason: 'invalid-request', requestState: 'invalid' } });
    const own = await elicit('alice', { inputResponses: { [key]: accept('Alice') }, requestState: state });
    expect(textOf(own)).toContain('Name: Alice');
  });

  it('re-asks when the retry lacks the answer, refuses malformed inputResponses, and a used state after a new round', async () => {
    const first = inputRequired(await elicit('alice'));
    const reasked = await elicit('alice', { inputResponses: { 'not-a-key': accept('x') }, requestState: first.state });
    const second = inputRequired(reasked);
    expect(second.key).toBe(first.key);
    expect(second.state).not.toBe(first.state);
    const used = await elicit('alice', { inputResponses: { [first.key]: accept('x') }, requestState: first.state });
    expect(used.response.error).toMatchObject({ code: -32602, data: { requestState: 'used' } });
    for (const inputResponses of [null, 'yes', { [second.key]: { action: 'maybe' } }]) {
      const malformed = await elicit('alice', { inputResponses, requestState: second.state });
      expect(malformed.response.error).toMatchObject({ code: -32602, data: { reason: 'invalid-request' } });
    }
    const done = await elicit('alice', { inputResponses: { [second.key]: accept('Grace Hopper') }, requestState: second.state });
    expect(textOf(done)).toContain('Name: Grace Hopper');
  });

  it('fails a call whose agent did not declare elicitation with -32021, naming the capability', async () => {
    const answer = await elicit('bob', {}, {});
    expect(answer.status).toBe(400);
    expect(answer.response.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: {} }, reason: 'invalid-request' } });
    const next = await elicit('bob');
    const { key, state } = inputRequired(next);
    expect(textOf(await elicit('bob', { inputResponses: { [key]: { action: 'cancel' } }, requestState: state }))).toContain('cancelled');
  });

  it('while one asking call of the agent waits for its retry (maybe never), another one asking gets its own InputRequiredResult, and each resumes with its own answer', async () => {
    const waiting = inputRequired(await elicit('alice'));
    const second = inputRequired(await elicit('alice'));
    expect(second.state).not.toBe(waiting.state);
    const secondDone = await elicit('alice', { inputResponses: { [second.key]: accept('Second') }, requestState: second.state });
    expect(textOf(secondDone)).toContain('Name: Second');
    const done = await elicit('alice', { inputResponses: { [waiting.key]: accept('First') }, requestState: waiting.state });
    expect(textOf(done)).toContain('Name: First');
  });

  it('bridges sampling the same way', async () => {
    const call = (extra: Record<string, unknown> = {}) =>
      modernPost(url(), stack.tokens.alice!, 'tools/call', { name: 'trigger-sampling-request', arguments: { prompt: 'Capital of France?', maxTokens: 20 }, ...extra }, caps({ sampling: {} }));
    const { key, request, state } = inputRequired(await call());
    expect(request).toMatchObject({ method: 'sampling/createMessage', params: { maxTokens: 20, messages: [{ role: 'user', content: { type: 'text', text: expect.stringContaining('Capital of France?') } }] } });
    const answer = { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'e2e-model', stopReason: 'endTurn' };
    const done = await call({ inputResponses: { [key]: answer }, requestState: state });
    expect(done.response.result.resultType).toBe('complete');
    expect(textOf(done)).toContain('Paris');
    expect(textOf(done)).toContain('e2e-model');
  });
});

describe('per-request client capabilities, beyond the kind of question', () => {
  const urlElicit = (capabilities: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    modernPost(url(), stack.tokens.alice!, 'tools/call', { name: 'trigger-url-elicitation', arguments: { url: 'https://example.com/consent' }, ...extra }, caps(capabilities));

  it('refuses a URL elicitation to an agent that declared form elicitation only, naming elicitation.url', async () => {
    const answer = await urlElicit({ elicitation: {} });
    expect(answer.status).toBe(400);
    expect(answer.response.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } }, reason: 'invalid-request' } });
  });

  it('asks an agent that declared elicitation.url, without the legacy elicitationId, and resumes the call', async () => {
    const { key, request, state } = inputRequired(await urlElicit({ elicitation: { url: {} } }));
    expect(request).toMatchObject({ method: 'elicitation/create', params: { mode: 'url', url: 'https://example.com/consent' } });
    expect(request.params).not.toHaveProperty('elicitationId');
    const done = await urlElicit({ elicitation: { url: {} } }, { inputResponses: { [key]: { action: 'accept' } }, requestState: state });
    expect(done.response.result.resultType).toBe('complete');
  });

  it("turns a legacy server's -32042 (URL elicitation required) into an InputRequiredResult whose retry sends the call again, never the code 2026-07-28 forbids", async () => {
    const errorPath = (extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = { elicitation: { url: {} } }) =>
      modernPost(url(), stack.tokens.alice!, 'tools/call', { name: 'trigger-url-elicitation', arguments: { url: 'https://example.com/pay', errorPath: true }, ...extra }, caps(capabilities));
    const first = await errorPath();
    expect(first.status).toBe(200);
    const prerequisite = inputRequired(first);
    expect(prerequisite.request).toMatchObject({ method: 'elicitation/create', params: { mode: 'url', url: expect.stringMatching(/^https?:\/\//), message: expect.any(String) } });
    expect(prerequisite.request.params).not.toHaveProperty('elicitationId');
    // Declined, the call is not sent again (it would bring the same elicitation back): the host says why.
    const declined = await errorPath({ inputResponses: { [prerequisite.key]: { action: 'decline' } }, requestState: prerequisite.state });
    expect(declined.response.error).toMatchObject({ code: -32603, data: { serverCode: -32042, action: 'decline' } });
    // The retry goes to the server again; it sees its prerequisite met and asks on the request path.
    const second = await errorPath({ inputResponses: { [prerequisite.key]: { action: 'accept' } }, requestState: prerequisite.state });
    const asked = inputRequired(second);
    expect(asked.request.params).toMatchObject({ mode: 'url', url: 'https://example.com/pay' });
    const done = await errorPath({ inputResponses: { [asked.key]: { action: 'accept' } }, requestState: asked.state });
    expect(done.response.result.resultType).toBe('complete');
    // Another agent's, a tampered or another request's state resends nothing.
    expect((await modernPost(url(), stack.tokens.bob!, 'tools/call', { name: 'trigger-url-elicitation', arguments: { url: 'https://example.com/pay', errorPath: true }, requestState: prerequisite.state }, caps({ elicitation: { url: {} } }))).response.error.data.requestState).toBe('invalid');
    expect((await errorPath({ requestState: `${prerequisite.state}x` })).response.error.data.requestState).toBe('invalid');
    const other = await modernPost(url(), stack.tokens.alice!, 'tools/call', { name: 'trigger-url-elicitation', arguments: { url: 'https://example.com/other', errorPath: true }, requestState: prerequisite.state }, caps({ elicitation: { url: {} } }));
    expect(other.response.error.data.requestState).toBe('invalid');
  });
});
