/**
 * OAuth's own error vocabulary (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707 §2): endpoints of the
 * authorization server answer `{"error": code, "error_description": message}`; the consent page
 * shows the same code and message. Callers branch on `code`, never on the message.
 *
 * @module
 */

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'temporarily_unavailable'
  | 'server_error';

export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  readonly code: OAuthErrorCode;
  readonly status: number;

  constructor(code: OAuthErrorCode, message: string, status = code === 'invalid_client' ? 401 : code === 'server_error' ? 500 : 400) {
    super(message);
    this.code = code;
    this.status = status;
  }

  toJson(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.message };
  }

  /** The JSON error response, never cached. */
  toResponse(headers: Record<string, string> = {}): Response {
    return Response.json(this.toJson(), { status: this.status, headers: { 'cache-control': 'no-store', ...headers } });
  }
}

/** The three codes nearly every refusal carries, by name: `throw invalidRequest('Missing code')`. */
export const invalidRequest = (message: string, status?: number) => new OAuthError('invalid_request', message, status);
export const invalidClient = (message: string, status?: number) => new OAuthError('invalid_client', message, status);
export const invalidGrant = (message: string) => new OAuthError('invalid_grant', message);
