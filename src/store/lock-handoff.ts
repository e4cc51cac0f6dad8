/**
 * Prompt handoff for the file store's directory locks (see pipeline-lock.ts). Each process listens on one local socket
 * for its whole life. A holder names itself in its lock directory (`holder-<pid>-<token>-<n>`); a waiter connects to
 * the holder's socket and says which holding it waits for, since when, and the name it will hold the lock under. On
 * release the holder tells the longest waiting one to go (rough FIFO across processes), and the others to queue at
 * that one's socket (`m <name>`), so that they never make a lock attempt that can only fail. A connection the holder
 * closes without a word means its process died (the kernel closed the socket): the waiter may take over at once.
 *
 * Delegation: a waiter may also say what it wants to do under the lock (an opaque request, e.g. an allocation). A
 * holder whose critical section knows how takes the requests of its waiters and answers each (`a <reply>`) once it has
 * done that work under its own holding, so that one holding commits several processes' work together; a request it
 * does not take is answered as before (`g`, `m`), one it takes but cannot do is declined (`d`), and the waiter does
 * the work itself. A holder from before delegation ignores the extra field, and a waiter that sends none is never
 * served.
 *
 * Linux: abstract socket names (nothing on disk, gone with the process). Elsewhere (macOS): a socket file in the
 * temp directory, removed on exit. If the socket cannot be set up, holders name no socket and waiters poll.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/** How long a released holding waits for its chosen successor before it tells the other waiters to try. */
const SUCCESSOR_GRACE_MS = 50;

export interface HolderName {
  /** Directory entry in the lock directory. */
  entry: string;
  holdingId: string;
  /** Where the holder listens; undefined when it could not listen (its waiters poll). */
  address: string | undefined;
}

export type WaitOutcome = 'go' | 'moved' | 'died' | 'timeout' | 'unreachable' | 'served' | 'declined';

export interface WaitResult {
  outcome: WaitOutcome;
  /** With `moved`: the process the lock goes to next, to queue at. */
  next?: HolderName;
  /** With `served`: the holder did the waiter's request, and this is its answer. */
  reply?: string;
}

/** A waiter's request, taken by the holder: answer it once its work is durable, or decline it (the waiter does it). */
export interface DelegatedRequest {
  readonly request: string;
  answer(reply: string): void;
  decline(): void;
}

interface Waiter {
  socket: net.Socket;
  arrival: number;
  /** The name the waiter will hold the lock under, if it said. */
  entry: string | undefined;
  /** What it would do under the lock (base64url), if it said. */
  request: string | undefined;
}

/** Longer requests are ignored (the waiter is then served as one without a request). */
const MAX_REQUEST_CHARS = 16_384;

const token = randomBytes(8).toString('hex');
let server: Promise<net.Server | undefined> | undefined;
let counter = 0;
/** Holdings of this process that waiters may queue for, by holding id. */
const holdings = new Map<string, Waiter[]>();

function addressOf(socketToken: string): string {
  return process.platform === 'linux'
    ? `\0weekly-media-lock-${socketToken}`
    : path.join(os.tmpdir(), `wml-${socketToken}.sock`);
}

const ENTRY = /^holder-(\d+)-([0-9a-f]{16}|none)-(\d+)$/;

export function parseHolderEntry(entry: string): HolderName | undefined {
  const m = ENTRY.exec(entry);
  if (!m) return undefined;
  return { entry, holdingId: `${m[1]}-${m[2]}-${m[3]}`, address: m[2] === 'none' ? undefined : addressOf(m[2]!) };
}

export function isHolderEntry(entry: string): boolean {
  return ENTRY.test(entry);
}

/** A fresh holder name for the next acquisition by this process, with waiters accepted for it from now on. */
export async function nextHolderName(): Promise<HolderName> {
  const listening = await listen();
  const holdingId = `${process.pid}-${listening ? token : 'none'}-${++counter}`;
  if (listening) holdings.set(holdingId, []);
  return { entry: `holder-${holdingId}`, holdingId, address: listening ? addressOf(token) : undefined };
}

/**
 * The lock is free (its directory removed): tell the longest waiting process to go. The promise resolves once that one
 * has taken the lock (or left, or the grace passed) and the others were told to try again, so that this process's
 * own next contender does not overtake a waiter that has waited longer.
 */
export function handOff(holdingId: string): Promise<void> {
  const waiters = holdings.get(holdingId) ?? [];
  holdings.delete(holdingId);
  const [first, ...rest] = [...waiters].sort((a, b) => a.arrival - b.arrival);
  if (!first) return Promise.resolve();
  // The others queue at the successor at once; one that named no successor is told to look again once it has the lock.
  const successor = first.entry && parseHolderEntry(first.entry)?.address ? first.entry : undefined;
  if (successor) for (const w of rest) w.socket.end(`m ${successor}\n`);
  const others = () => {
    if (!successor) for (const w of rest) w.socket.end('m\n');
  };
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      others();
      resolve();
    };
    const timer = setTimeout(done, SUCCESSOR_GRACE_MS);
    first.socket.once('close', done);
    first.socket.end('g\n');
  });
}

/**
 * Up to `max` requests of the holding's waiters, oldest first; those waiters leave the holding's queue (each must be
 * answered or declined). Waiters without a request, and those over `max`, stay queued for the handoff.
 */
export function takeRequests(holdingId: string, max: number): DelegatedRequest[] {
  const waiters = holdings.get(holdingId);
  if (!waiters) return [];
  const taken = waiters
    .filter((w) => w.request !== undefined)
    .sort((a, b) => a.arrival - b.arrival)
    .slice(0, Math.max(0, max));
  holdings.set(
    holdingId,
    waiters.filter((w) => !taken.includes(w)),
  );
  return taken.map((w) => {
    let settled = false;
    const send = (line: string) => {
      if (settled) return;
      settled = true;
      w.socket.end(line);
    };
    return {
      request: Buffer.from(w.request!, 'base64url').toString('utf8'),
      answer: (reply) => send(`a ${Buffer.from(reply, 'utf8').toString('base64url')}\n`),
      // Like `m` (look again), and the waiter does its request itself from now on (an older waiter reads it as `m`).
      decline: () => send('d\n'),
    };
  });
}

/** The holding will not be released normally (lost, or never taken): its waiters should look again now. */
export function abandon(holdingId: string): void {
  for (const w of holdings.get(holdingId) ?? []) w.socket.end('m\n');
  holdings.delete(holdingId);
}

/**
 * Waits until the holder tells this process to go or to look again, or dies, or `maxMs` passes, or answers `request`.
 * `arrival` orders the waiters (epoch ms, fractional); `self` is the name this process will hold the lock under, so
 * that the holder can send the other waiters to queue behind it.
 */
export function waitForHolder(
  holder: HolderName,
  arrival: number,
  maxMs: number,
  self?: HolderName,
  request?: string,
): Promise<WaitResult> {
  const address = holder.address;
  if (!address) return Promise.resolve({ outcome: 'unreachable' });
  return new Promise((resolve) => {
    let connected = false;
    const socket = net.connect(address);
    const finish = (result: WaitResult) => {
      clearTimeout(timer);
      resolve(result);
      socket.destroy();
    };
    const timer = setTimeout(() => finish({ outcome: 'timeout' }), maxMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      connected = true;
      // holding, arrival, then the waiter's own name (`-` for none, only needed as a placeholder before a request)
      const fields = [holder.holdingId, String(arrival)];
      if (self?.address || request !== undefined) fields.push(self?.address ? self.entry : '-');
      if (request !== undefined) fields.push(Buffer.from(request, 'utf8').toString('base64url'));
      socket.write(`${fields.join(' ')}\n`);
    });
    let line = '';
    socket.on('data', (d: string) => {
      line += d;
      const end = line.indexOf('\n');
      if (end < 0) return;
      const said = line.slice(0, end);
      if (said.startsWith('g')) return finish({ outcome: 'go' });
      if (said === 'd') return finish({ outcome: 'declined' });
      if (said.startsWith('a ')) {
        return finish({ outcome: 'served', reply: Buffer.from(said.slice(2), 'base64url').toString('utf8') });
      }
      const next = parseHolderEntry(said.slice(1).trim());
      finish(next?.address ? { outcome: 'moved', next } : { outcome: 'moved' });
    });
    socket.on('error', () => undefined);
    // A connection that ends without a word: the holder's process is gone (it never closes one silently).
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ outcome: connected ? 'died' : 'unreachable' });
    });
  });
}

/** The process's one socket, set up on first use; undefined (waiters poll) if it cannot listen. */
function listen(): Promise<net.Server | undefined> {
  server ??= new Promise((resolve) => {
    const address = addressOf(token);
    const s = net.createServer(accept);
    s.once('error', () => resolve(undefined));
    s.listen(address, () => {
      // Never keeps the process alive by itself; the socket file (not on Linux) goes with the process.
      s.unref();
      if (!address.startsWith('\0')) process.once('exit', () => rmSync(address, { force: true }));
      resolve(s);
    });
  });
  return server;
}

function accept(socket: net.Socket): void {
  socket.unref();
  socket.setEncoding('utf8');
  socket.on('error', () => undefined);
  let line = '';
  const onData = (d: string) => {
    line += d;
    if (!line.includes('\n')) return;
    socket.off('data', onData); // one line per connection
    const [holdingId, arrival, entry, request] = line.slice(0, line.indexOf('\n')).split(' ');
    const waiters = holdings.get(holdingId ?? '');
    if (!waiters) {
      socket.end('m\n'); // released already, or never ours
      return;
    }
    const waiter: Waiter = {
      socket,
      arrival: Number(arrival),
      entry: entry && isHolderEntry(entry) ? entry : undefined,
      request: request && request.length <= MAX_REQUEST_CHARS && /^[\w-]+$/.test(request) ? request : undefined,
    };
    waiters.push(waiter);
    socket.once('close', () => {
      const current = holdings.get(holdingId!);
      const i = current?.indexOf(waiter) ?? -1;
      if (i >= 0) current!.splice(i, 1);
    });
  };
  socket.on('data', onData);
}
