/**
 * Known-nasty inputs for the agent endpoints and for the link, each with the outcome it must
 * have, plus the fast-check arbitraries that generate more of the same kind.
 *
 * Outcomes of an agent request (`classify`):
 * - `refused`: a 4xx JSON body naming a stable reason (`error.data.reason` or `error.reason`);
 * - `answered`: 200 with JSON-RPC responses only (a server's own error included, passed through);
 * - `accepted`: 202, nothing to answer (notifications, responses, an empty batch);
 * - anything else (5xx, a 4xx without a reason, a body that is not JSON-RPC) is `unclear`.
 *
 * @module
 */
import fc from 'fast-check';
import { isFailureReason } from '../../shared/errors.ts';
import type { RpcAnswer } from './raw-client.ts';

export type AgentOutcome = 'refused' | 'answered' | 'accepted' | 'unclear';

export function classify(answer: RpcAnswer): AgentOutcome {
  if (answer.status === 202) return 'accepted';
  if (answer.status === 200) {
    const ok = answer.messages.length > 0 && answer.messages.every((m) => 'id' in m && (isResult(m.result) || isError(m.error)));
    return ok ? 'answered' : 'unclear';
  }
  if (answer.status >= 400 && answer.status < 500) {
    let body: { error?: { reason?: unknown; data?: { reason?: unknown } } };
    try {
      body = JSON.parse(answer.body) as typeof body;
    } catch {
      return 'unclear';
    }
    return isFailureReason(body.error?.data?.reason) || isFailureReason(body.error?.reason) ? 'refused' : 'unclear';
  }
  return 'unclear';
}

const isResult = (value: unknown) => typeof value === 'object' && value !== null;
const isError = (value: unknown) => typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'number' && typeof (value as { message?: unknown }).message === 'string';

const INIT_PARAMS = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'nasty', version: '1' } };
const init = (extra: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: INIT_PARAMS, ...extra });
const call = (id: number, message: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } });

export interface AgentCase {
  name: string;
  body: string;
  /** Header changes for this case (`null` removes a header). */
  headers?: Record<string, string | null>;
  method?: string;
  expect: AgentOutcome;
}

/** Requests without a session: each must be refused before any server starts (but the one valid initialize). */
export const NO_SESSION_CASES: AgentCase[] = [
  { name: 'empty body', body: '', expect: 'refused' },
  { name: 'truncated JSON', body: '{"jsonrpc":"2.0","id":1,"method":"initia', expect: 'refused' },
  { name: 'JSON null', body: 'null', expect: 'refused' },
  { name: 'a bare string', body: '"initialize"', expect: 'refused' },
  { name: 'a number that overflows', body: '1e999', expect: 'refused' },
  { name: 'NUL bytes', body: '\u0000\u0000\u0000', expect: 'refused' },
  // UTF-8 decoding drops a leading BOM (WHATWG Encoding), so this is a valid initialize.
  { name: 'a byte order mark before the JSON', body: `\ufeff${JSON.stringify(init())}`, expect: 'answered' },
  { name: '100,000 nested arrays', body: `${'['.repeat(100_000)}${']'.repeat(100_000)}`, expect: 'refused' },
  { name: 'JSON-RPC 1.0', body: JSON.stringify(init({ jsonrpc: '1.0' })), expect: 'refused' },
  { name: 'initialize with an object id', body: JSON.stringify(init({ id: {} })), expect: 'refused' },
  { name: 'initialize without params', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize' }), expect: 'refused' },
  { name: 'two initializes in a batch', body: JSON.stringify([init(), init({ id: 2 })]), expect: 'refused' },
  { name: 'initialize and a call in a batch', body: JSON.stringify([init(), call(2, 'x')]), expect: 'refused' },
  { name: 'an empty batch', body: '[]', expect: 'refused' },
  { name: 'a tool call without a session', body: JSON.stringify(call(1, 'x')), expect: 'refused' },
  { name: 'a 2 MiB initialize', body: JSON.stringify(init({ params: { ...INIT_PARAMS, clientInfo: { name: 'x'.repeat(2 << 20), version: '1' } } })), expect: 'refused' },
  { name: 'a 20 MiB body', body: JSON.stringify(init({ pad: 'y'.repeat(20 << 20) })), expect: 'refused' },
  { name: 'GET without a session', body: '', method: 'GET', expect: 'refused' },
  { name: 'DELETE without a session', body: '', method: 'DELETE', expect: 'refused' },
  { name: 'text/plain', body: JSON.stringify(init()), headers: { 'content-type': 'text/plain' }, expect: 'refused' },
  { name: 'no Accept', body: JSON.stringify(init()), headers: { accept: null }, expect: 'refused' },
  { name: 'a session id nobody has', body: JSON.stringify(call(1, 'x')), headers: { 'mcp-session-id': 'no-such-session' }, expect: 'refused' },
];

/** Requests inside an open session of the echo server (or /mcp). */
export const IN_SESSION_CASES: AgentCase[] = [
  { name: 'empty body', body: '', expect: 'refused' },
  { name: 'truncated JSON', body: '{"jsonrpc":"2.0","id":1,', expect: 'refused' },
  { name: 'not JSON-RPC', body: '{"jsonrpc":"2.0","id":{},"method":5}', expect: 'refused' },
  { name: 'params that are a string', body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}', expect: 'refused' },
  { name: 'a second initialize', body: JSON.stringify(init()), expect: 'refused' },
  { name: '101 pings in a batch', body: JSON.stringify(Array.from({ length: 101 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'ping' }))), expect: 'refused' },
  { name: 'a 5 MiB body', body: JSON.stringify(call(1, 'z'.repeat(5 << 20))), expect: 'refused' },
  { name: 'a 20 MiB body', body: JSON.stringify(call(1, 'z'.repeat(20 << 20))), expect: 'refused' },
  { name: 'an unsupported protocol version', body: JSON.stringify(call(1, 'x')), headers: { 'mcp-protocol-version': '1999-01-01' }, expect: 'refused' },
  { name: 'text/plain', body: JSON.stringify(call(1, 'x')), headers: { 'content-type': 'text/plain' }, expect: 'refused' },
  { name: 'Accept: text/html', body: JSON.stringify(call(1, 'x')), headers: { accept: 'text/html' }, expect: 'refused' },
  { name: 'PUT', body: '', method: 'PUT', expect: 'refused' },
  { name: 'PATCH', body: '{}', method: 'PATCH', expect: 'refused' },
  { name: 'an unknown method', body: '{"jsonrpc":"2.0","id":7,"method":"no/such/method"}', expect: 'answered' },
  { name: 'a call of an unknown tool', body: '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"../../etc/passwd","arguments":{}}}', expect: 'answered' },
  { name: '100 calls in one batch', body: JSON.stringify(Array.from({ length: 100 }, (_, i) => call(100 + i, `batch-${i}`))), expect: 'answered' },
  { name: 'a 3 MiB argument (within every limit)', body: JSON.stringify(call(9, 'w'.repeat(3 << 20))), expect: 'answered' },
  { name: 'a response to a request never made', body: '{"jsonrpc":"2.0","id":424242,"result":{}}', expect: 'accepted' },
  { name: 'a cancellation of a request never made', body: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}', expect: 'accepted' },
  { name: 'an empty batch (nothing to answer)', body: '[]', expect: 'accepted' },
];

/** Random request bodies biased towards JSON-RPC shapes, so the fuzz gets past JSON.parse. */
export const agentBody: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc
    .record(
      {
        jsonrpc: fc.constantFrom('2.0', '1.0', 2, null),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), fc.constant({})),
        method: fc.oneof(fc.constantFrom('tools/call', 'tools/list', 'ping', 'initialize', 'resources/read', 'notifications/cancelled', 'prompts/get'), fc.string({ maxLength: 20 })),
        params: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ name: fc.constantFrom('echo', 'echo__echo', ''), arguments: fc.jsonValue({ maxDepth: 2 }) })),
        result: fc.jsonValue({ maxDepth: 1 }),
        error: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    )
    .chain((m) => fc.oneof(fc.constant(m as unknown), fc.array(fc.constant(m as unknown), { maxLength: 4 })))
    .map((v) => JSON.stringify(v)),
);

export interface FrameCase {
  name: string;
  frame: string | Buffer;
  /** `alive`: ignored (or answered) and the link stays up; `closed`: the worker ends the link saying why. */
  expect: 'alive' | 'closed';
}

const message = (channel: unknown, body: unknown = { jsonrpc: '2.0', id: 1, result: { forged: true } }) => JSON.stringify({ v: 1, type: 'channel-message', channel, message: body });

export const FRAME_CASES: FrameCase[] = [
  { name: 'not JSON', frame: 'hello worker', expect: 'alive' },
  { name: 'a JSON array', frame: '[1,2,3]', expect: 'alive' },
  { name: 'JSON null', frame: 'null', expect: 'alive' },
  { name: 'an unknown frame type', frame: '{"v":1,"type":"nope"}', expect: 'alive' },
  { name: 'a message for a channel never opened', frame: message(424242), expect: 'alive' },
  { name: 'a message for channel "1" (a string)', frame: message('1'), expect: 'alive' },
  { name: 'a message for channel -1', frame: message(-1), expect: 'alive' },
  { name: 'a message for channel 2^53', frame: message(2 ** 53), expect: 'alive' },
  { name: 'a message that is an array', frame: message(1, [1, 2]), expect: 'alive' },
  { name: 'an ack for a channel never opened', frame: '{"v":1,"type":"channel-open-ack","channel":77}', expect: 'alive' },
  { name: 'a close for a channel never opened', frame: '{"v":1,"type":"channel-close","channel":78,"reason":"server-exited"}', expect: 'alive' },
  { name: 'a close with an unknown reason', frame: '{"v":1,"type":"channel-close","channel":79,"reason":"because"}', expect: 'alive' },
  { name: 'a keepalive with a negative id', frame: '{"v":1,"type":"keepalive","id":-5}', expect: 'alive' },
  { name: 'a channel-open sent to the worker', frame: '{"v":1,"type":"channel-open","channel":5,"request":{"type":"mcp","connection":{"server-name":"echo"}}}', expect: 'alive' },
  { name: 'an unknown protocol version', frame: '{"v":2,"type":"keepalive","id":1}', expect: 'closed' },
  { name: 'an object without a version', frame: '{}', expect: 'closed' },
  { name: 'a binary frame', frame: Buffer.from([0xde, 0xad, 0xbe, 0xef]), expect: 'closed' },
  { name: 'a frame over 16 MiB', frame: message(1, { jsonrpc: '2.0', method: 'x', params: { pad: 'p'.repeat((16 << 20) + 1) } }), expect: 'closed' },
];

/** Random frames: arbitrary text, arbitrary JSON, and near-miss link frames. */
export const linkFrame: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 100 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc
    .record(
      {
        v: fc.constantFrom(1, 1, 1, 2, '1'),
        type: fc.constantFrom('channel-open', 'channel-open-ack', 'channel-open-error', 'channel-message', 'channel-close', 'keepalive', 'keepalive-reply', 'link-close', 'nope'),
        channel: fc.oneof(fc.integer({ min: -2, max: 200 }), fc.double(), fc.string({ maxLength: 4 })),
        id: fc.integer(),
        message: fc.jsonValue({ maxDepth: 2 }),
        request: fc.jsonValue({ maxDepth: 2 }),
        reason: fc.oneof(fc.constantFrom('host-offline', 'server-exited'), fc.string({ maxLength: 10 })),
      },
      { requiredKeys: ['v', 'type'] },
    )
    .map((f) => JSON.stringify(f)),
);
