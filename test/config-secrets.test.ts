import { describe, expect, it } from 'vitest';
import { parsedJsonText } from '../sidecar/config/config-file-problems.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { parseSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { parseWorkerConfig, parseWorkerConfigText } from '../worker/config/worker-config.ts';
import { ValidationError } from '../shared/validation.ts';

const SECRET = 'sk-live-0123456789SECRET';

function problems(parse: () => unknown): string[] {
  try {
    parse();
  } catch (error) {
    if (error instanceof ValidationError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  return [];
}

/**
 * What the worker's and the sidecar's config refusals say of a credential in the file: nothing.
 * Across both parsers, as one config typo reaches either (`shared/http-headers-schema.ts`,
 * `shared/json-syntax-problem.ts`).
 */
describe('a config file that is not JSON', () => {
  it('is refused by the worker and the sidecar alike naming where, quoting none of it (review s21)', () => {
    const text = `{\n  "servers": {"docs": {"executor": {"type": "http", "url": "https://docs.example.test/mcp", "headers": {"Authorization": Bearer ${SECRET}}}}}\n}`;
    const at = text.indexOf('Bearer');
    const expected = `(root): not valid JSON: Unexpected token in JSON at position ${at} (line 2 column ${at - 1})`;
    expect(problems(() => parseWorkerConfigText(text, { runtime: 'edge' }))).toEqual([expected]);
    const read = parsedJsonText('mcp.json', text);
    expect(read.ok ? null : `${read.issue.path}: ${read.issue.message}`).toBe(expected);
  });
});

describe('configured HTTP headers', () => {
  it('are refused when fetch could not send them, naming the header and never quoting the value (review s21)', () => {
    const headers = { Authorization: `Bearer ${SECRET}\nX-Injected: 1`, 'X-Key': `${SECRET}€`, 'X-Bell': `${SECRET}\x07`, 'Bad Name': 'x', 'Transfer-Encoding': 'chunked', 'X-Fine': `Basic ${SECRET}`, 'X-Latin': `clé-${SECRET}` };
    const worker = problems(() => parseWorkerConfig({ agents: [], servers: { docs: { executor: { type: 'http', url: 'https://docs.example.test/mcp', headers } } } }, { runtime: 'edge' }));
    const host = problems(() => parseMcpServersFile({ mcpServers: { docs: { url: 'https://docs.example.test/mcp', headers } } }));
    // A collector's headers too (review s22: every export failed at run time instead).
    const otlp = { endpoint: 'https://collector.example.test/v1/traces', headers };
    const workerAudit = problems(() => parseWorkerConfig({ agents: [], servers: {}, audit: { otlp } }, { runtime: 'edge' }));
    const sidecarAudit = problems(() => parseSidecarConfig({ audit: { otlp } })).filter((p) => p.startsWith('audit.'));
    for (const [found, prefix] of [[worker, 'servers.docs.executor.headers'], [host, 'mcpServers.docs.headers'], [workerAudit, 'audit.otlp.headers'], [sidecarAudit, 'audit.otlp.headers']] as const) {
      expect(found).toEqual(expect.arrayContaining([
        `${prefix}.Authorization: must be an HTTP header value: no line break or other control character, and none past U+00FF (the value is not shown: it may be a credential)`,
        `${prefix}.X-Key: must be an HTTP header value: no line break or other control character, and none past U+00FF (the value is not shown: it may be a credential)`,
      ]));
      expect(found).toEqual(expect.arrayContaining([
        `${prefix}.X-Bell: must be an HTTP header value: no line break or other control character, and none past U+00FF (the value is not shown: it may be a credential)`,
        `${prefix}.Transfer-Encoding: is the connection's own header, which fetch sets itself and refuses to send`,
      ]));
      expect(found.some((p) => p.includes('Bad Name') && p.includes('must be an HTTP header name'))).toBe(true);
      expect(found.some((p) => p.includes('X-Latin'))).toBe(false);
      expect(found.join('\n')).not.toContain(SECRET);
      expect(found.some((p) => p.includes('X-Fine'))).toBe(false);
    }
  });
});
