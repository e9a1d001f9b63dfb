import { describe, expect, it } from 'vitest';
import { readBoundedBody } from './bounded-body.ts';

const url = 'http://localhost/mcp';

/** A body of `chunks` × 1 KiB with no declared length; `pulled` counts what was read of it. */
function streamed(chunks: number) {
  const state = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled++ >= chunks) controller.close();
      else controller.enqueue(new Uint8Array(1024).fill(0x61));
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { request: new Request(url, { method: 'POST', body, duplex: 'half' } as RequestInit), state };
}

describe('readBoundedBody', () => {
  it('reads a body within the limit, declared or not', async () => {
    expect(await readBoundedBody(new Request(url, { method: 'POST', body: '{"a":1}' }), 100)).toEqual({ kind: 'text', text: '{"a":1}' });
    const { request } = streamed(2);
    expect(await readBoundedBody(request, 4096)).toEqual({ kind: 'text', text: 'a'.repeat(2048) });
  });

  it('refuses a declared length over the limit without reading it', async () => {
    const request = new Request(url, { method: 'POST', headers: { 'content-length': '5000' }, body: 'x' });
    expect(await readBoundedBody(request, 4096)).toEqual({ kind: 'too-large', maxBytes: 4096 });
  });

  it('gives up an undeclared body as soon as it passes the limit', async () => {
    const { request, state } = streamed(1024);
    expect(await readBoundedBody(request, 4096)).toEqual({ kind: 'too-large', maxBytes: 4096 });
    expect(state.cancelled).toBe(true);
    expect(state.pulled).toBeLessThan(10);
  });
});
