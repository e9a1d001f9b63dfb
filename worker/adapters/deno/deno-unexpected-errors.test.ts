import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DENO } from '../../../test/support/paths.ts';

const HERE = import.meta.dirname;

describe('keepServingOnUnexpectedErrors under Deno', () => {
  it('logs an exception thrown in a WebSocket handler and an unhandled rejection, and the worker goes on serving (review s21)', () => {
    const script = `
      const { keepServingOnUnexpectedErrors } = await import(${JSON.stringify(pathToFileURL(join(HERE, 'deno-unexpected-errors.ts')).href)});
      keepServingOnUnexpectedErrors({ error: (msg, fields) => console.error(JSON.stringify({ msg, ...fields })) });
      const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, (request) => {
        if (request.headers.get('upgrade') !== 'websocket') return new Response('served');
        const { socket, response } = Deno.upgradeWebSocket(request);
        socket.onmessage = () => { throw new RangeError('thrown in onmessage'); };
        return response;
      });
      void Promise.reject(new Error('nobody awaited this'));
      const ws = new WebSocket('ws://127.0.0.1:' + server.addr.port + '/');
      ws.onopen = () => ws.send('anything');
      // Served after the throw: the process is still up and answers a request.
      await new Promise((resolve) => (ws.onerror = ws.onclose = resolve, setTimeout(resolve, 200)));
      const answer = await fetch('http://127.0.0.1:' + server.addr.port + '/').then((r) => r.text(), (e) => 'no answer: ' + e);
      console.log(answer === 'served' ? 'still serving' : answer);
      Deno.exit(0);
    `;
    const run = spawnSync(DENO, ['eval', '--ext=ts', script], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stdout).toBe('still serving\n');
    const lines = run.stderr.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual(expect.arrayContaining([
      expect.objectContaining({ msg: 'Uncaught exception: logged, and this process keeps serving every other session', error: 'RangeError', message: 'thrown in onmessage' }),
      expect.objectContaining({ msg: 'Unhandled promise rejection: logged, and this process keeps serving every other session', message: 'nobody awaited this' }),
    ]));
  });
});
