/**
 * Which client capabilities a server's question needs (schema.ts `ClientCapabilities`), judged per
 * request from the `_meta` capabilities the modern agent declared for that request: a question it
 * cannot answer is not put to it, and the request fails with `MissingRequiredClientCapability`
 * (-32021) naming exactly what was missing. Beyond the capability of each kind:
 * - URL-mode elicitation needs `elicitation.url`; form mode needs `elicitation.form`, or an
 *   `elicitation` object without sub-keys (the spec's `{}`: form only);
 * - sampling with `tools` or `toolChoice` needs `sampling.tools`; an `includeContext` other than
 *   `none` needs `sampling.context`.
 * Pure functions, no I/O.
 *
 * @module
 */
import { isRecord } from '../records.ts';

/** A server's question, as `input-requests.ts` holds it. */
interface InputRequest {
  method: string;
  params: Record<string, unknown>;
}

type Capabilities = Record<string, Record<string, unknown>>;

/** What `capabilities` lacks of what `request` needs, as a `ClientCapabilities` fragment (`{}` when nothing). */
export function lackedFor(request: InputRequest, capabilities: Record<string, unknown>): Capabilities {
  const params = request.params;
  if (request.method === 'roots/list') return isRecord(capabilities.roots) ? {} : { roots: {} };
  if (request.method === 'elicitation/create') {
    const declared = capabilities.elicitation;
    const url = params.mode === 'url';
    if (!isRecord(declared)) return { elicitation: url ? { url: {} } : {} };
    if (url) return isRecord(declared.url) ? {} : { elicitation: { url: {} } };
    const formOnly = Object.keys(declared).length === 0;
    return formOnly || isRecord(declared.form) ? {} : { elicitation: { form: {} } };
  }
  const declared = capabilities.sampling;
  const needs: Record<string, unknown> = {};
  if (params.tools !== undefined || params.toolChoice !== undefined) needs.tools = {};
  if (params.includeContext === 'thisServer' || params.includeContext === 'allServers') needs.context = {};
  if (!isRecord(declared)) return { sampling: needs };
  const lacked = Object.fromEntries(Object.keys(needs).filter((key) => !isRecord(declared[key])).map((key) => [key, {}]));
  return Object.keys(lacked).length > 0 ? { sampling: lacked } : {};
}

/** `lackedFor` over several requests, merged. */
export function lackedForAll(requests: Iterable<InputRequest>, capabilities: Record<string, unknown>): Capabilities {
  const merged: Capabilities = {};
  for (const request of requests) {
    for (const [name, sub] of Object.entries(lackedFor(request, capabilities))) merged[name] = { ...merged[name], ...sub };
  }
  return merged;
}
