import { describe, expect, it } from 'vitest';
import { PARAM_HEADERS_META_KEY, paramHeadersSchema } from '../../../shared/param-headers-meta.ts';
import { takeParamHeaders } from './param-headers.ts';

describe('takeParamHeaders', () => {
  it('takes the headers out of _meta, leaving the rest of the params as they were', () => {
    const params = { name: 't', arguments: { a: 1 }, _meta: { [PARAM_HEADERS_META_KEY]: { region: 'eu' }, progressToken: 'p' } };
    expect(takeParamHeaders(params)).toEqual({ params: { name: 't', arguments: { a: 1 }, _meta: { progressToken: 'p' } }, headers: { region: 'eu' } });
  });

  it('counts a malformed value or none as no headers, and still removes the key', () => {
    expect(takeParamHeaders({ _meta: { [PARAM_HEADERS_META_KEY]: { region: 5 } } })).toEqual({ params: { _meta: {} }, headers: {} });
    expect(takeParamHeaders({ name: 't' })).toEqual({ params: { name: 't' }, headers: {} });
    expect(takeParamHeaders(undefined)).toEqual({ params: undefined, headers: {} });
  });

  it('reads the empty object every call without headers carries as the schema does', () => {
    const read = takeParamHeaders(JSON.parse(`{"name":"t","_meta":{"${PARAM_HEADERS_META_KEY}":{}}}`));
    expect(read).toEqual({ params: { name: 't', _meta: {} }, headers: paramHeadersSchema().parse({}) });
    expect(takeParamHeaders({ _meta: { [PARAM_HEADERS_META_KEY]: [] } }).headers).toEqual({});
  });
});
