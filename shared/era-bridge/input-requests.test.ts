import { describe, expect, it } from 'vitest';
import { checkInputResponses, inputRequestOf, inputRequiredResult, missingCapabilities, originalParams, type InputRequest } from './input-requests.ts';

const open = new Map<string, InputRequest>([
  ['elicitation-1', { method: 'elicitation/create', params: { message: 'm', requestedSchema: { type: 'object', properties: {} } } }],
  ['sampling-2', { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } }],
  ['roots-3', { method: 'roots/list', params: {} }],
]);

describe('bridged input requests', () => {
  it('strips the params 2026-07-28 removed and keeps the rest', () => {
    expect(inputRequestOf('elicitation/create', { mode: 'url', message: 'm', url: 'https://x', elicitationId: 'e', task: { ttl: 1 } })).toEqual({
      method: 'elicitation/create',
      params: { mode: 'url', message: 'm', url: 'https://x' },
    });
    expect(inputRequestOf('roots/list', undefined)).toEqual({ method: 'roots/list', params: {} });
  });

  it('names the capabilities a set of requests needs and the client lacks', () => {
    expect(missingCapabilities(open.values(), { elicitation: {}, sampling: {}, roots: {} })).toEqual({});
    expect(missingCapabilities(open.values(), { sampling: {} })).toEqual({ elicitation: {}, roots: {} });
    expect(missingCapabilities(open.values(), { elicitation: true, sampling: null })).toEqual({ elicitation: {}, sampling: {}, roots: {} });
  });

  it('builds an InputRequiredResult without caching fields', () => {
    const result = inputRequiredResult(new Map([...open].slice(0, 1)), 'state', { name: 's', version: '1' });
    expect(result).toEqual({
      resultType: 'input_required',
      inputRequests: { 'elicitation-1': open.get('elicitation-1') },
      requestState: 'state',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 's', version: '1' } },
    });
  });

  it('takes the responses to open keys, ignores unknown keys, and treats a missing inputResponses as empty', () => {
    const responses = {
      'elicitation-1': { action: 'accept', content: { name: 'Ada' } },
      'sampling-2': { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' },
      'roots-3': { roots: [{ uri: 'file:///w' }] },
      extra: 42,
    };
    const { extra: _extra, ...expected } = responses;
    expect(checkInputResponses(responses, open)).toEqual({ ok: true, responses: expected });
    expect(checkInputResponses(undefined, open)).toEqual({ ok: true, responses: {} });
  });

  it('refuses malformed inputResponses, naming the key and what is wrong', () => {
    for (const value of [null, 'yes', [1], 3]) expect(checkInputResponses(value, open)).toMatchObject({ ok: false, problem: expect.stringContaining('must be an object') });
    expect(checkInputResponses({ 'elicitation-1': 12345 }, open)).toMatchObject({ ok: false, problem: expect.stringContaining('params.inputResponses["elicitation-1"] is not a result of elicitation/create') });
    expect(checkInputResponses({ 'elicitation-1': { action: 'maybe' } }, open)).toMatchObject({ ok: false, problem: expect.stringContaining('["elicitation-1"].action') });
    expect(checkInputResponses({ 'sampling-2': { role: 'user', content: {}, model: 'm' } }, open)).toMatchObject({ ok: false });
    expect(checkInputResponses({ 'roots-3': { roots: [{ name: 'no uri' }] } }, open)).toMatchObject({ ok: false });
  });

  it('keeps only what a retry must repeat: no _meta, no inputResponses, no requestState', () => {
    expect(originalParams({ name: 't', arguments: { a: 1 }, _meta: { progressToken: 1 }, inputResponses: {}, requestState: 's' })).toEqual({ name: 't', arguments: { a: 1 } });
    expect(originalParams(undefined)).toEqual({});
  });
});
