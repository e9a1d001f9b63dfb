/**
 * How the aggregate shows a server it could not reach: never silently missing.
 *
 * An offline or refused server appears as one placeholder tool, `<server>__unavailable`, whose
 * description states the reason and whose call returns an `isError` result with that reason; the
 * `initialize` instructions list it too. An agent (or the model driving it) therefore learns that
 * the server exists, why it cannot be used, and what to do, instead of guessing from a short list.
 *
 * A server that has not answered yet when the aggregate answers without it (its open goes on) is
 * shown the same way, with reason `starting`: not a failure, so no `FailureReason`, and listed
 * apart in the instructions, whose message says what the agent will see when it answers.
 *
 * @module
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { namespacedName, UNAVAILABLE_TOOL } from './naming.ts';
import { RETRYABLE } from './upstream-set.ts';
import { NAMESPACE_SEPARATOR } from '../../shared/namespace-separator.ts';
import type { UpstreamFailure } from './rpc-errors.ts';
import type { FailureReason } from '../../shared/errors.ts';

/** A server that has not answered yet, its open still going on: listed by its placeholder until it does. */
export interface Starting {
  reason: 'starting';
  message: string;
}

/** Why a server's placeholder is listed: a failure with its stable reason, or a server still starting. */
export type Unavailable = UpstreamFailure | Starting;

/** A `/mcp` session's server whose open goes on after initialize or a list was answered without it. */
export function startingInSession(): Starting {
  return {
    reason: 'starting',
    message: 'it has not answered yet and its open goes on: its tools are listed once it answers (the agent is sent notifications/tools/list_changed then), and a call of one of its tools waits for it',
  };
}

/** A server that did not answer a modern `/mcp` list within `waitMs`: nothing is kept between requests, so the agent asks again. */
export function startingStateless(waitMs: number): Starting {
  return { reason: 'starting', message: `it did not answer within ${waitMs / 1000} s and may still be starting: list again to see its tools` };
}

/** Longest piece of an upstream's own instructions repeated in the aggregate's. */
const MAX_UPSTREAM_INSTRUCTIONS = 2_000;

export function unavailableText(server: string, failure: Unavailable): string {
  return `Server "${server}" is unavailable (reason: ${failure.reason}): ${failure.message}`;
}

/** The placeholder tool listed in place of an unavailable server's tools. */
export function unavailableTool(server: string, failure: Unavailable): Tool {
  return {
    name: namespacedName(server, UNAVAILABLE_TOOL),
    description: `${unavailableText(server, failure)}.${afterwards(failure)}`,
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true, openWorldHint: false },
  };
}

/**
 * What comes next, by the reason: a server still starting, or whose failure may pass, is tried
 * again by the session (a list retries it); any other (a stale trust profile, a refusal by policy)
 * stays until the agent opens a new session or the config changes.
 */
function afterwards(failure: Unavailable): string {
  if (failure.reason === 'starting') return '';
  return RETRYABLE.has(failure.reason as FailureReason)
    ? ' Its tools appear when it is reachable again; list tools to retry.'
    : ' It stays so for this session: a new session, or a change of config, is needed first.';
}

/** What calling the placeholder returns: the reason, as a tool error. */
export function unavailableResult(server: string, failure: Unavailable): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: unavailableText(server, failure) }],
    structuredContent: { server, reason: failure.reason, message: failure.message },
  };
}

export interface InstructionsInput {
  connected: ReadonlyArray<{ server: string; instructions?: string }>;
  /** Servers that failed, and servers still starting (reason `starting`). */
  failed: ReadonlyArray<[string, Unavailable]>;
}

/**
 * The aggregate's `initialize` instructions: the naming scheme, who is up, who is still starting
 * (their own instructions cannot be given: these are sent once), who is not and why.
 */
export function aggregateInstructions(input: InstructionsInput): string {
  const lines = [
    `Switchyard aggregates the MCP servers this agent may use. Tool and prompt names are "<server>${NAMESPACE_SEPARATOR}<name>"; resource URIs are unchanged.`,
    `Available: ${input.connected.length === 0 ? 'none' : input.connected.map((c) => c.server).join(', ')}.`,
  ];
  const starting = input.failed.filter(([, f]) => f.reason === 'starting');
  const failed = input.failed.filter(([, f]) => f.reason !== 'starting');
  if (starting.length > 0) {
    lines.push(`Still starting (each has a placeholder tool "<server>${NAMESPACE_SEPARATOR}${UNAVAILABLE_TOOL}" until it answers; its own instructions, if any, are not repeated here):`);
    for (const [server, failure] of starting) lines.push(`- ${server}: ${failure.reason}: ${failure.message}`);
  }
  if (failed.length > 0) {
    lines.push(`Unavailable (each has a placeholder tool "<server>${NAMESPACE_SEPARATOR}${UNAVAILABLE_TOOL}" stating why):`);
    for (const [server, failure] of failed) lines.push(`- ${server}: ${failure.reason}: ${failure.message}`);
  }
  for (const { server, instructions } of input.connected) {
    if (instructions === undefined || instructions.trim() === '') continue;
    const text = instructions.length > MAX_UPSTREAM_INSTRUCTIONS ? `${instructions.slice(0, MAX_UPSTREAM_INSTRUCTIONS)}…` : instructions;
    lines.push('', `Instructions of "${server}":`, text);
  }
  return lines.join('\n');
}
