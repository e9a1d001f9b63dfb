import { afterEach, describe, expect, it, vi } from 'vitest';
import { withSseKeepalive } from './sse-keepalive.ts';

afterEach(() => {
  vi.useRealTimers();
});

const encoder = new TextEncoder();

/** An SSE answer whose body the test writes to. */
function sseAnswer(contentType = 'text/event-stream') {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => void (cancelled = true),
  });
  return { response: new Response(body, { headers: { 'content-type': contentType, 'mcp-session-id': 's-1' } }), controller, cancelled: () => cancelled };
}

async function readAll(response: Response): Promise<string> {
  return new Response(response.body).text();
}

describe('withSseKeepalive', () => {
  it('writes no comment inside an event that reaches it in pieces, however long the agent stops reading in it', async () => {
    vi.useFakeTimers();
    const { response, controller } = sseAnswer();
    const kept = withSseKeepalive(response, 1_000);
    const text = readAll(kept);
    const event = `event: message\ndata: {"result":"${'x'.repeat(100)}"}\n\n`;
    // Three pieces, as a large answer is handed over; the agent's reading stalls inside it.
    controller.enqueue(encoder.encode(event.slice(0, 40)));
    await vi.advanceTimersByTimeAsync(5_000);
    controller.enqueue(encoder.encode(event.slice(40, 90)));
    await vi.advanceTimersByTimeAsync(5_000);
    controller.enqueue(encoder.encode(event.slice(90)));
    await vi.advanceTimersByTimeAsync(2_600);
    controller.close();
    const out = await text;
    expect(out.startsWith(event)).toBe(true);
    // Once the event ended, the quiet stream is kept alive again.
    expect(out.slice(event.length)).toMatch(/^(: keepalive\n\n)+$/);
  });


  it('writes a comment into a quiet event stream, never inside the events, and ends with it', async () => {
    vi.useFakeTimers();
    const { response, controller } = sseAnswer();
    const kept = withSseKeepalive(response, 1_000);
    expect(kept.headers.get('mcp-session-id')).toBe('s-1');
    const text = readAll(kept);
    controller.enqueue(encoder.encode('event: message\ndata: {"a":1}\n\n'));
    await vi.advanceTimersByTimeAsync(2_600);
    controller.enqueue(encoder.encode('event: message\ndata: {"b":2}\n\n'));
    await vi.advanceTimersByTimeAsync(400);
    controller.close();
    const out = await text;
    expect(out.startsWith('event: message\ndata: {"a":1}\n\n: keepalive\n\n')).toBe(true);
    expect(out.endsWith('event: message\ndata: {"b":2}\n\n')).toBe(true);
    expect(out.split(': keepalive\n\n').length - 1).toBeGreaterThanOrEqual(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops its timer and cancels the source when the agent goes away', async () => {
    vi.useFakeTimers();
    const { response, cancelled } = sseAnswer();
    const kept = withSseKeepalive(response, 1_000);
    await kept.body!.cancel('agent left');
    expect(cancelled()).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('leaves any other answer as it is', () => {
    const json = Response.json({ ok: true });
    expect(withSseKeepalive(json)).toBe(json);
    const accepted = new Response(null, { status: 202 });
    expect(withSseKeepalive(accepted)).toBe(accepted);
  });

  it('stops its timer when the stream under it fails in the middle of an event (review s20)', async () => {
    vi.useFakeTimers();
    const { response, controller } = sseAnswer();
    const kept = withSseKeepalive(response, 1_000);
    const text = readAll(kept).then(() => 'read', (error: Error) => error.message);
    controller.enqueue(encoder.encode('event: message\ndata: {"a"'));
    await vi.advanceTimersByTimeAsync(10);
    controller.error(new Error('cut on backpressure'));
    expect(await text).toBe('cut on backpressure');
    expect(vi.getTimerCount()).toBe(0);
  });
});
