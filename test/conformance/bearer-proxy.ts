/**
 * A forwarding proxy on 127.0.0.1 that adds `Authorization: Bearer <token>` to every request, for
 * clients that cannot send headers (the conformance CLI's client has no option for them).
 *
 * Everything else passes through unchanged both ways, including the `Host` and `Origin` headers
 * (so the worker's DNS-rebinding guard judges exactly what the client sent; the proxy's own
 * `127.0.0.1:<port>` is a loopback Host the worker accepts) and streamed bodies: response headers
 * are flushed at once (an SSE stream may stay silent for a while) and chunks are piped as they
 * come. When the client drops a response (cancels an SSE stream), the upstream request is ended
 * too, so the worker sees the disconnect as it would from a direct client.
 */
import { createServer, request, type IncomingHttpHeaders } from 'node:http';

export interface BearerProxy {
  /** `http://127.0.0.1:<port>`; append the worker path. */
  url: string;
  close(): Promise<void>;
}

/** Per-connection headers (RFC 9110 §7.6.1): each hop sets its own. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade'];

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const copy = { ...headers };
  for (const name of HOP_BY_HOP) delete copy[name];
  return copy;
}

export async function startBearerProxy(target: string, token: string): Promise<BearerProxy> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const headers: IncomingHttpHeaders = { ...endToEnd(req.headers), authorization: `Bearer ${token}` };
    const out = request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        res.flushHeaders();
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('bearer proxy: upstream unreachable');
    });
    // The client went away before the answer ended (e.g. it cancelled an SSE stream): end ours too.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
