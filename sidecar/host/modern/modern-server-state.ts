/**
 * A modern server's `requestState`, sealed by the host before its agent sees it, so a state one
 * server issued cannot be carried to another (on `/mcp` the retry's name picks the server, and an
 * agent could name a different one), nor to another agent's instance, nor past its expiry. The
 * server's own state rides inside, byte for byte, as `inner`, bound like a bridged call's state
 * (`request-state.ts`): agent, server, trust revision, method and a digest of the original
 * params. On the retry the host opens it and hands the server its own state back.
 *
 * A server state longer than `MAX_INNER_STATE_LENGTH` is refused rather than sealed: the agent
 * would have to echo it in full anyway.
 *
 * @module
 */
import { PENDING_CALL_MS } from './bridged-call.ts';
import { originalParams } from '../../../shared/era-bridge/input-requests.ts';
import type { InstanceKey } from './legacy-instance-pool.ts';
import type { JsonRpcErrorShape } from './modern-results.ts';
import { hostRequestStateCodec, MAX_INNER_STATE_LENGTH, MAX_STATE_LENGTH, paramsDigest, type RequestStateCodec } from './request-state.ts';
import { isRecord } from '../../../shared/records.ts';

const INVALID_PARAMS = -32602;
/** The `handle` of a sealed server state: there is no pending call on the host to name. */
const SERVER_STATE = 'modern-server';

const refused = (problem: 'invalid' | 'gone', message: string): { error: JsonRpcErrorShape } => ({
  error: { code: INVALID_PARAMS, message, data: { reason: 'invalid-request', requestState: problem } },
});

/** The retry's params with the server's own state in place of the host's; or the error to answer. */
export async function openServerState(method: string, params: unknown, key: InstanceKey, codec?: RequestStateCodec): Promise<{ params: unknown } | { error: JsonRpcErrorShape }> {
  if (!isRecord(params) || params.requestState === undefined) return { params };
  const state = params.requestState;
  if (typeof state !== 'string') return refused('invalid', 'params.requestState must be the string the host sent: retry the original request');
  const opened = await (codec ?? (await hostRequestStateCodec())).open(state);
  if (!opened.ok) {
    return opened.problem === 'expired'
      ? refused('gone', 'requestState has expired: retry the original request')
      : refused('invalid', 'requestState failed its integrity check: retry the original request');
  }
  const claims = opened.claims;
  const digest = await paramsDigest({ method, params: originalParams(params) });
  if (claims.handle !== SERVER_STATE || claims.inner === undefined || claims.agent !== key.agent || claims.server !== key.server || claims.revision !== key.revision) {
    return refused('invalid', 'requestState was not issued to this agent for this server: retry the original request');
  }
  if (claims.method !== method || claims.digest !== digest) return refused('invalid', 'requestState belongs to another request: a retry repeats the original method and params');
  return { params: { ...params, requestState: claims.inner } };
}

/** An `input_required` result with its server state sealed for the agent; any other result as it is. */
export async function sealServerState(method: string, params: unknown, result: unknown, key: InstanceKey, codec?: RequestStateCodec): Promise<{ result: unknown } | { error: JsonRpcErrorShape }> {
  if (!isRecord(result) || result.resultType !== 'input_required' || typeof result.requestState !== 'string') return { result };
  if (result.requestState.length > MAX_INNER_STATE_LENGTH) {
    return { error: { code: -32603, message: `The server's requestState is longer than ${MAX_INNER_STATE_LENGTH} characters: the host does not relay it`, data: { reason: 'invalid-request' } } };
  }
  const digest = await paramsDigest({ method, params: originalParams(params) });
  const sealed = await (codec ?? (await hostRequestStateCodec())).seal(
    { agent: key.agent, server: key.server, revision: key.revision, handle: SERVER_STATE, round: 0, method, digest, inner: result.requestState },
    PENDING_CALL_MS,
  );
  // Escaped and encoded, a state within the bound can seal past what `open` takes back (32 K of
  // quotes seal to 85 K): refused now, not as a forged state on the agent's retry (review s23).
  if (sealed.length > MAX_STATE_LENGTH) {
    return { error: { code: -32603, message: `The server's requestState is too long sealed (${sealed.length} characters, of at most ${MAX_STATE_LENGTH}): the host does not relay it`, data: { reason: 'invalid-request' } } };
  }
  return { result: { ...result, requestState: sealed } };
}
