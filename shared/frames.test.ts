import { describe, expect, it } from 'vitest';
import { decodeFrame, encodeFrame, LINK_PROTOCOL_VERSION, MAX_FRAME_BYTES, type Frame } from './frames.ts';
import { WireError } from './errors.ts';
import { ValidationError } from './validation.ts';

describe('link frames', () => {
  it('round-trips every frame type', () => {
    const frames: Frame[] = [
      { v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp', connection: { 'server-name': 'x' } } },
      { v: 1, type: 'channel-open-ack', channel: 1 },
      { v: 1, type: 'channel-open-error', channel: 1, reason: 'trust-profile-stale', message: 'Profile changed' },
      { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', id: 1, method: 'ping' } },
      { v: 1, type: 'channel-close', channel: 1, reason: 'server-exited', message: 'exit 3' },
      { v: 1, type: 'keepalive', id: 7 },
      { v: 1, type: 'keepalive-reply', id: 7 },
      { v: 1, type: 'link-close', reason: 'host-offline', message: 'Replaced by a newer link' },
    ];
    for (const frame of frames) expect(decodeFrame(encodeFrame(frame))).toEqual(frame);
  });

  it('refuses another protocol version, unknown reasons and unknown keys', () => {
    expect(() => decodeFrame(JSON.stringify({ v: LINK_PROTOCOL_VERSION + 1, type: 'keepalive', id: 1 }))).toThrow(ValidationError);
    expect(() => decodeFrame('{"v":1,"type":"channel-close","channel":1,"reason":"because"}')).toThrow(ValidationError);
    expect(() => decodeFrame('{"v":1,"type":"keepalive","id":1,"extra":true}')).toThrow(/extra: unknown key/);
    expect(() => decodeFrame('not json')).toThrow(/not valid JSON/);
  });

  it('never truncates: an oversized message fails to encode and an oversized frame fails to decode', () => {
    const big = 'x'.repeat(MAX_FRAME_BYTES);
    const frame: Frame = { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', method: 'n', params: { big } } };
    expect(() => encodeFrame(frame)).toThrow(WireError);
    expect(() => decodeFrame(JSON.stringify(frame))).toThrow(/exceeds/);
  });
});
