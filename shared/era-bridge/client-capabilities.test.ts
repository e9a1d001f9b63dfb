import { describe, expect, it } from 'vitest';
import { lackedFor, lackedForAll } from './client-capabilities.ts';

const form = { method: 'elicitation/create', params: { message: 'm', requestedSchema: { type: 'object', properties: {} } } };
const url = { method: 'elicitation/create', params: { mode: 'url', message: 'm', url: 'https://example.com' } };
const sample = (extra: Record<string, unknown> = {}) => ({ method: 'sampling/createMessage', params: { messages: [], maxTokens: 1, ...extra } });

describe('client capabilities a question needs', () => {
  it('takes elicitation {} as form only: a URL question needs elicitation.url', () => {
    expect(lackedFor(form, { elicitation: {} })).toEqual({});
    expect(lackedFor(url, { elicitation: {} })).toEqual({ elicitation: { url: {} } });
    expect(lackedFor(url, { elicitation: { url: {} } })).toEqual({});
    expect(lackedFor(form, { elicitation: { url: {} } })).toEqual({ elicitation: { form: {} } });
    expect(lackedFor(form, { elicitation: { form: {}, url: {} } })).toEqual({});
    expect(lackedFor(form, {})).toEqual({ elicitation: {} });
    expect(lackedFor(url, { sampling: {} })).toEqual({ elicitation: { url: {} } });
  });

  it('asks sampling.tools for tool use and sampling.context for included context', () => {
    expect(lackedFor(sample(), { sampling: {} })).toEqual({});
    expect(lackedFor(sample({ tools: [] }), { sampling: {} })).toEqual({ sampling: { tools: {} } });
    expect(lackedFor(sample({ includeContext: 'thisServer' }), { sampling: { tools: {} } })).toEqual({ sampling: { context: {} } });
    expect(lackedFor(sample({ includeContext: 'none', toolChoice: { mode: 'auto' } }), { sampling: { tools: {} } })).toEqual({});
    expect(lackedFor(sample({ tools: [] }), {})).toEqual({ sampling: { tools: {} } });
  });

  it('merges what several questions lack', () => {
    expect(lackedForAll([url, sample({ tools: [] }), { method: 'roots/list', params: {} }], { elicitation: {}, sampling: {} })).toEqual({
      elicitation: { url: {} }, sampling: { tools: {} }, roots: {},
    });
  });
});
