/**
 * The worker config's `oauth` section: the built-in authorization server, an external OpenID
 * Connect issuer, or both. Without the section the worker takes static bearer tokens only, as
 * before; with it, static tokens keep working beside OAuth.
 *
 * @module
 */
import * as z from '../../../shared/zod.ts';

export const DEFAULT_ACCESS_TOKEN_SECONDS = 3600;
export const DEFAULT_REFRESH_TOKEN_DAYS = 30;

const isLoopbackHost = (host: string) => host === 'localhost' || host === '127.0.0.1' || host === '[::1]';

/** Whether `value` is an https: URL, or http: on this machine's loopback: where an issuer and its keys may be. */
export function isSecureUrl(value: string): boolean {
  const url = URL.canParse(value) ? new URL(value) : null;
  return url !== null && (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname)));
}

const IssuerUrlSchema = z.string().check(
  z.url('must be an absolute URL'),
  z.refine(isSecureUrl, 'must be an https: URL (http: only on this machine\'s loopback)'),
  z.refine((value) => !value.includes('#') && !value.includes('?'), 'must have no query or fragment'),
);

export const BuiltInServerSchema = z.strictObject({
  'access-token-seconds': z
    ._default(z.number().check(z.int(), z.gte(60), z.lte(86_400)), DEFAULT_ACCESS_TOKEN_SECONDS)
    .check(z.describe('Lifetime of an access token, in seconds (60 to 86400); clients renew it with their refresh token')),
  'refresh-token-days': z
    ._default(z.number().check(z.int(), z.gte(1), z.lte(365)), DEFAULT_REFRESH_TOKEN_DAYS)
    .check(z.describe('Lifetime of a refresh token, in days; each use replaces it with a new one, and reusing a replaced one more than 10 s after its first use revokes the whole grant')),
  'client-id-metadata-documents': z
    ._default(z.boolean(), true)
    .check(z.describe('Accept https client_id URLs (Client ID Metadata Documents), fetched with SSRF protection')),
  'dynamic-client-registration': z
    ._default(z.boolean(), true)
    .check(z.describe('Accept Dynamic Client Registration (RFC 7591) at /oauth/register, for clients without Client ID Metadata Documents')),
});

export const ExternalIssuerSchema = z.strictObject({
  'issuer': IssuerUrlSchema.check(z.describe('The OpenID Connect issuer whose JWT access tokens are accepted (its "iss")')),
  'jwks-uri': z.optional(IssuerUrlSchema).check(z.describe('Its JSON Web Key Set; default: "jwks_uri" from the issuer\'s /.well-known/openid-configuration')),
  'agent-claim': z._default(z.string().check(z.minLength(1)), 'sub').check(z.describe('The token claim whose value names the agent (an "agents[].name") the client acts as')),
  'audience': z.optional(z.string().check(z.minLength(1))).check(z.describe('The "aud" the issuer puts in tokens for this worker; default: the resource URL of the endpoint (RFC 8707)')),
});

export const OAuthConfigSchema = z
  .strictObject({
    'built-in': z.optional(BuiltInServerSchema).check(z.describe('The worker\'s own authorization server: a person signs in on its consent page with an agent or admin token and approves a client for one agent')),
    'external-issuer': z.optional(ExternalIssuerSchema).check(z.describe('An external OpenID Connect issuer whose JWT access tokens are verified against its JWKS')),
  })
  .check(
    z.refine((o) => o['built-in'] !== undefined || o['external-issuer'] !== undefined, 'needs "built-in", "external-issuer" or both'),
    z.describe('OAuth 2.1 for agents (MCP authorization); static bearer tokens keep working beside it'),
  );

export type OAuthConfig = z.infer<typeof OAuthConfigSchema>;
export type BuiltInServerConfig = z.infer<typeof BuiltInServerSchema>;
export type ExternalIssuerConfig = z.infer<typeof ExternalIssuerSchema>;
