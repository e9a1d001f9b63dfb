/**
 * What both conformance fixtures (`conformance-fixture-server.mjs`, legacy, and
 * `modern-conformance-fixture-server.mjs`) serve alike: content bytes, and the inputSchema the
 * json-schema-2020-12 scenario expects back intact (taken from the suite's own scenario).
 */

/** A 1×1 PNG and a 44-byte silent WAV header, base64. */
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
export const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';

/** JSON Schema 2020-12 keywords a gateway must not rewrite: `$schema`, `$defs` with `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties`. */
export const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' }, contactMethod: { type: 'string', enum: ['phone', 'email'] }, phone: { type: 'string' }, email: { type: 'string' } },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};
