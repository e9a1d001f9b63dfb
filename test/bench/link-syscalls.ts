/**
 * Link frames, WebSocket messages, socket writes and wake-ups per echo call, as the kernel sees
 * them: `node --import tsx test/bench/link-syscalls.ts [--calls 200] [--variants b,m]
 * [--bundle sidecar.js]`.
 *
 * Starts the stack (`stack.ts`), warms each variant up, then runs `calls` sequential echoes with
 * `strace -f` attached to the worker and the sidecar (every thread), tracing writes, reads and
 * `epoll_wait`. Writes on the link's TCP connection are decoded as WebSocket frames (the
 * sidecar's unmasked) and their JSON read for the link frame type, so it prints, per call and per
 * process: link writes, WebSocket messages, frames by type, other socket writes, and epoll_wait
 * returns (a wake-up each). strace slows both processes a lot: its counts are what it is for,
 * not its times.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connectHttp, echoLoop, modernAgent, type Agent } from './client.ts';
import { installCleanup, ProcessRegistry } from './processes.ts';
import { startStack, TOKENS, type Stack } from './stack.ts';

type Variant = 'b' | 'm';
const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '100' },
    variants: { type: 'string', default: 'b,m' },
    bundle: { type: 'string' },
  },
});
const calls = Number(values.calls);
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);
const log = (line: string) => process.stdout.write(line + '\n');

function agentFor(stack: Stack, variant: Variant): Promise<Agent> {
  const url = `${stack.url}/servers/everything/mcp`;
  return variant === 'm' ? Promise.resolve(modernAgent(url, TOKENS.modern)) : connectHttp(url, TOKENS.plain);
}

async function traced(pid: number, out: string): Promise<() => Promise<void>> {
  const child = spawn('strace', ['-f', '-qq', '-ttt', '-yy', '-xx', '-s', '4096', '-e', 'trace=write,writev,sendto,sendmsg,epoll_wait,epoll_pwait,read,recvfrom', '-o', out, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let attached = '';
  child.stderr!.on('data', (chunk: Buffer) => (attached += chunk.toString()));
  await new Promise((resolve) => setTimeout(resolve, 700)); // strace attaches to every thread
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  };
}

/** Bytes of a strace `-xx` string argument. */
function bytesOf(escaped: string): Buffer {
  return Buffer.from(escaped.replace(/\\x/g, ''), 'hex');
}

/** WebSocket frames in one write: [opcode, payload text]; partial frames are counted as such. */
function wsFrames(data: Buffer): Array<{ opcode: number; text: string }> {
  const frames: Array<{ opcode: number; text: string }> = [];
  let at = 0;
  while (at + 2 <= data.length) {
    const opcode = data[at]! & 0x0f;
    const masked = (data[at + 1]! & 0x80) !== 0;
    let length = data[at + 1]! & 0x7f;
    let head = 2;
    if (length === 126) {
      length = data.readUInt16BE(at + 2);
      head = 4;
    } else if (length === 127) {
      length = Number(data.readBigUInt64BE(at + 2));
      head = 10;
    }
    const mask = masked ? data.subarray(at + head, at + head + 4) : undefined;
    if (masked) head += 4;
    const payload = Buffer.from(data.subarray(at + head, at + head + length));
    if (mask !== undefined) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
    frames.push({ opcode, text: payload.toString('utf8') });
    at += head + length;
  }
  return frames;
}

interface Counts {
  linkWrites: number;
  wsMessages: number;
  frames: Record<string, number>;
  otherWrites: number;
  epollWaits: number;
  linkReads: number;
}

function analyse(file: string, linkPort: number, side: 'worker' | 'sidecar'): Counts {
  const counts: Counts = { linkWrites: 0, wsMessages: 0, frames: {}, otherWrites: 0, epollWaits: 0, linkReads: 0 };
  const text = readFileSync(file, 'utf8');
  for (const line of text.split('\n')) {
    const call = /^\d+\s+(?:[\d.]+\s+)?(\w+)\((\d+)<((?:TCP|UNIX-STREAM):\[[^\]]*\]|[^>]*)>(?:, )?(.*)$/.exec(line);
    if (line.includes('epoll_wait(') || line.includes('epoll_pwait(')) {
      const returned = /= (\d+)$/.exec(line);
      if (returned !== null && Number(returned[1]) > 0) counts.epollWaits++;
      continue;
    }
    if (call === null) continue;
    const [, name, , fdDesc, rest] = call;
    const isLink = fdDesc!.includes(`:${linkPort}]`) || fdDesc!.includes(`:${linkPort}->`);
    if (name === 'read' || name === 'recvfrom') {
      if (isLink && !/= -1/.test(line)) counts.linkReads++;
      continue;
    }
    if (!/^TCP/.test(fdDesc!) && !/^UNIX|^pipe|^\/dev/.test(fdDesc!)) continue;
    if (!isLink) {
      if (/^TCP/.test(fdDesc!)) counts.otherWrites++;
      continue;
    }
    counts.linkWrites++;
    const strings = [...rest!.matchAll(/"((?:\\x[0-9a-f]{2})*)"/g)].map((m) => bytesOf(m[1]!));
    for (const frame of wsFrames(Buffer.concat(strings))) {
      if (frame.opcode === 0) continue;
      counts.wsMessages++;
      let type = `opcode ${frame.opcode}`;
      if (frame.opcode === 1) {
        try {
          type = (JSON.parse(frame.text) as { type: string }).type;
        } catch {
          type = 'partial';
        }
      }
      counts.frames[type] = (counts.frames[type] ?? 0) + 1;
    }
  }
  void side;
  return counts;
}

function perCall(counts: Counts): string {
  const f = (n: number) => (n / calls).toFixed(2);
  const frames = Object.entries(counts.frames).filter(([type]) => !type.startsWith('keepalive')).map(([type, n]) => `${type} ${f(n)}`).join(', ');
  return `link writes ${f(counts.linkWrites)}, ws messages ${f(counts.wsMessages)} [${frames}], link reads ${f(counts.linkReads)}, other tcp writes ${f(counts.otherWrites)}, epoll wake-ups ${f(counts.epollWaits)}`;
}

/** The sidecar's TCP connection to the worker: its local port, from /proc. */
function linkPortOf(sidecarPid: number, workerPort: number): number {
  const inodes = new Set(readdirSync(`/proc/${sidecarPid}/fd`).map((fd) => { try { return /socket:\[(\d+)\]/.exec(readlinkSafe(`/proc/${sidecarPid}/fd/${fd}`))?.[1]; } catch { return undefined; } }).filter(Boolean));
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10 || !inodes.has(cols[9]!)) continue;
    const local = parseInt(cols[1]!.split(':')[1]!, 16);
    const remote = parseInt(cols[2]!.split(':')[1]!, 16);
    if (remote === workerPort) return local;
  }
  throw new Error('No link connection found');
}
import { readlinkSync } from 'node:fs';
const readlinkSafe = (path: string) => readlinkSync(path);

async function main(): Promise<void> {
  const stack = await startStack(registry, values.bundle !== undefined ? { sidecarBundle: values.bundle } : {});
  const workerPort = Number(new URL(stack.url).port);
  const linkPort = linkPortOf(stack.sidecar.pid, workerPort);
  const dir = mkdtempSync(join(tmpdir(), 'link-syscalls-'));
  for (const variant of values.variants.split(',') as Variant[]) {
    const agent = await agentFor(stack, variant);
    await echoLoop(agent, 'echo', 0, Number(values.warmup), 'warmup');
    const stopWorker = await traced(stack.worker.pid, join(dir, `${variant}-worker`));
    const stopSidecar = await traced(stack.sidecar.pid, join(dir, `${variant}-sidecar`));
    const timed = await echoLoop(agent, 'echo', calls, 0, 'timed');
    await stopWorker();
    await stopSidecar();
    await agent.close();
    if (timed.errors > 0) throw new Error(`(${variant}) ${timed.errors} errors: ${timed.firstError}`);
    log(`(${variant}) worker:  ${perCall(analyse(join(dir, `${variant}-worker`), linkPort, 'worker'))}`);
    log(`(${variant}) sidecar: ${perCall(analyse(join(dir, `${variant}-sidecar`), linkPort, 'sidecar'))}`);
  }
  log(`traces in ${dir}`);
}

main()
  .then(async () => {
    await cleanup();
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`link-syscalls: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
