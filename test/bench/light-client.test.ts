import { describe, expect, it } from 'vitest';
import { readAnswer } from './light-client.ts';

const SSE = 'text/event-stream';

describe('reading the answer to a light client request', () => {
  it('reads a JSON answer with the request id', () => {
    expect(readAnswer('{"jsonrpc":"2.0","id":3,"result":{"ok":true}}', 'application/json', 3)).toEqual({ ok: true });
  });

  it('fails a JSON answer that carries another id', () => {
    expect(() => readAnswer('{"jsonrpc":"2.0","id":2,"result":{}}', 'application/json', 3)).toThrow(/No answer to request 3/);
  });

  it('fails on a JSON-RPC error, JSON or SSE', () => {
    const error = '{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool"}}';
    expect(() => readAnswer(error, 'application/json', 3)).toThrow(/Request 3 failed: -32602 Unknown tool/);
    expect(() => readAnswer(`event: message\ndata: ${error}\n\n`, SSE, 3)).toThrow(/-32602/);
  });

  it('finds the response among notifications and requests on an SSE stream, CRLF or LF', () => {
    const stream = [
      'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\r\n\r\n',
      'id: 7\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}\r\n\r\n',
      'event: message\r\ndata: {"jsonrpc":"2.0","id":3,"result":{"text":"Echo: a"}}\r\n\r\n',
    ].join('');
    expect(readAnswer(stream, `${SSE}; charset=utf-8`, 3)).toEqual({ text: 'Echo: a' });
    expect(readAnswer(stream.replaceAll('\r\n', '\n'), SSE, 3)).toEqual({ text: 'Echo: a' });
  });

  it('joins the data lines of one event and takes data without the space after the colon', () => {
    const stream = ': keep-alive\n\nevent: message\ndata:{"jsonrpc":"2.0",\ndata: "id":4,"result":{"n":1}}\n\n';
    expect(readAnswer(stream, SSE, 4)).toEqual({ n: 1 });
  });

  it('fails an SSE stream with no answer to the id', () => {
    expect(() => readAnswer('event: message\ndata: {"jsonrpc":"2.0","id":9,"result":{}}\n\n', SSE, 4)).toThrow(/No answer to request 4/);
    expect(() => readAnswer('', SSE, 4)).toThrow(/No answer to request 4/);
  });
});
