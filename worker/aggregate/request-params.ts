/**
 * Reading the params of an agent's request to the aggregate. The aggregate passes params on as
 * they came, so it checks only the members it routes by, and a call's `arguments`; a request
 * without them is answered -32602 (invalid params) naming the member, before anything is sent
 * upstream.
 *
 * @module
 */
import type { Params } from './rpc/json-rpc-peer.ts';
import { RPC_CODES, RpcError } from './rpc/peer-errors.ts';

/** `params[key]` when it is a string. */
export function stringParam(params: Params, key: string): string {
  const value = params[key];
  if (typeof value !== 'string') throw new RpcError(RPC_CODES.invalidParams, `Invalid params: params.${key} must be a string`, { reason: 'invalid-request' });
  return value;
}

/** `params[key]` when it is an object. */
export function objectParam(params: Params, key: string): Record<string, unknown> {
  const value = params[key];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RpcError(RPC_CODES.invalidParams, `Invalid params: params.${key} must be an object`, { reason: 'invalid-request' });
  return value as Record<string, unknown>;
}
