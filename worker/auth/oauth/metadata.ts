/**
 * The two discovery documents: Protected Resource Metadata (RFC 9728) for the whole worker and
 * for each agent endpoint, and the built-in server's Authorization Server Metadata (RFC 8414,
 * with RFC 9207's `iss` flag and Client ID Metadata Document support).
 *
 * @module
 */
import { SCOPE } from './grants.ts';

export interface MetadataOptions {
  builtIn: boolean;
  externalIssuer: string | undefined;
  registration: boolean;
  metadataDocuments: boolean;
}

/** The authorization servers a client may use, the built-in one first. */
export function authorizationServers(base: string, options: MetadataOptions): string[] {
  return [...(options.builtIn ? [base] : []), ...(options.externalIssuer !== undefined ? [options.externalIssuer] : [])];
}

export function protectedResourceMetadata(base: string, path: string, options: MetadataOptions): Record<string, unknown> {
  return {
    resource: `${base}${path}`,
    authorization_servers: authorizationServers(base, options),
    ...(options.builtIn ? { scopes_supported: [SCOPE] } : {}),
    bearer_methods_supported: ['header'],
    resource_name: path === '' ? 'Switchyard' : `Switchyard ${path}`,
  };
}

export function authorizationServerMetadata(base: string, options: MetadataOptions): Record<string, unknown> {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    ...(options.registration ? { registration_endpoint: `${base}/oauth/register` } : {}),
    revocation_endpoint: `${base}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    scopes_supported: [SCOPE],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: options.metadataDocuments,
  };
}
