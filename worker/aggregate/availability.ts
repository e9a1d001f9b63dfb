/**
 * How the aggregate shows a server it could not reach: never silently missing.
 *
 * An offline or refused server appears as one placeholder tool, `<server>__unavailable`, whose
 * description states the reason and whose call returns an `isError` result with that reason; the
 * `initialize` instructions list it too. An agent (or the model driving it) therefore learns that
 * the server exists, why it cannot be used, and what to do, instead of guessing from a short list.
 *
 * @module
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { namespacedName, UNAVAILABLE_TOOL } from './naming.ts';
import { NAMESPACE_SEPARATOR } from '../../shared/namespace-separator.ts';
import type { UpstreamFailure } from './rpc-errors.ts';

/** Longest piece of an upstream's own instructions repeated in the aggregate's. */
const MAX_UPSTREAM_INSTRUCTIONS = 2_000;

export function unavailableText(server: string, failure: UpstreamFailure): string {
  return `Server "${server}" is unavailable (reason: ${failure.reason}): ${failure.message}`;
}

/** The placeholder tool listed in place of an unavailable server's tools. */
export function unavailableTool(server: string, failure: UpstreamFailure): Tool {
  return {
    name: namespacedName(server, UNAVAILABLE_TOOL),
    description: `${unavailableText(server, failure)}. Its tools appear when it is reachable again; list tools to retry.`,
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true, openWorldHint: false },
  };
}

/** What calling the placeholder returns: the reason, as a tool error. */
export function unavailableResult(server: string, failure: UpstreamFailure): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: unavailableText(server, failure) }],
    structuredContent: { server, reason: failure.reason, message: failure.message },
  };
}

export interface InstructionsInput {
  connected: ReadonlyArray<{ server: string; instructions?: string }>;
  failed: ReadonlyArray<[string, UpstreamFailure]>;
}

/** The aggregate's `initialize` instructions: the naming scheme, who is up, who is not and why. */
export function aggregateInstructions(input: InstructionsInput): string {
  const lines = [
    `Switchyard aggregates the MCP servers this agent may use. Tool and prompt names are "<server>${NAMESPACE_SEPARATOR}<name>"; resource URIs are unchanged.`,
    `Available: ${input.connected.length === 0 ? 'none' : input.connected.map((c) => c.server).join(', ')}.`,
  ];
  if (input.failed.length > 0) {
    lines.push('Unavailable (each has a placeholder tool "<server>__unavailable" stating why):');
    for (const [server, failure] of input.failed) lines.push(`- ${server}: ${failure.reason}: ${failure.message}`);
  }
  for (const { server, instructions } of input.connected) {
    if (instructions === undefined || instructions.trim() === '') continue;
    const text = instructions.length > MAX_UPSTREAM_INSTRUCTIONS ? `${instructions.slice(0, MAX_UPSTREAM_INSTRUCTIONS)}…` : instructions;
    lines.push('', `Instructions of "${server}":`, text);
  }
  return lines.join('\n');
}
