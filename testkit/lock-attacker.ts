/**
 * A hostile local process, for the lock's trust-boundary tests. Usage:
 *   node lock-attacker.js <holder pid> '<json {idle, garbage, noNewlineBytes, squat}>'
 * It finds every socket the holder process listens on (its fds against /proc/net/unix and /proc/net/tcp{,6}), then
 * against each: holds `idle` connections open, sends `garbage` bytes of junk lines, and sends `noNewlineBytes` bytes
 * without a newline. With `squat`, it also listens on the names the lock's old handoff used (`\0weekly-media-lock-*`
 * for any token it can read in the data dir's lock entries, and a fixed one), closing every connection at once after
 * telling the peer to go ahead. It prints one JSON line (what it found and did), then holds everything until killed.
 */
import { readdirSync } from 'node:fs';
import * as net from 'node:net';
import { listeningAddresses, safe } from './process-sockets';

interface Plan {
  idle: number;
  garbage: number;
  noNewlineBytes: number;
  squat?: string;
}

function connect(address: string | number): Promise<net.Socket | undefined> {
  return new Promise((resolve) => {
    const socket = typeof address === 'number' ? net.connect(address, '127.0.0.1') : net.connect(address);
    socket.on('error', () => resolve(undefined));
    socket.on('connect', () => resolve(socket));
  });
}

/** Listens on the old handoff's names: every peer is told `g` (go) and its connection closed at once ("died"). */
function squat(dataDir: string): string[] {
  const tokens = new Set(['0000000000000000']);
  for (const entry of safe(() => readdirSync(`${dataDir}/pipeline.lock`)) ?? []) {
    const m = /^holder-\d+-([0-9a-f]{16})-\d+$/.exec(entry);
    if (m) tokens.add(m[1]!);
  }
  const names: string[] = [];
  for (const token of tokens) {
    const name = `\0weekly-media-lock-${token}`;
    const server = net.createServer((s) => s.end('g\n'));
    server.on('error', () => undefined);
    server.listen(name, () => names.push(name.slice(1)));
  }
  return names;
}

async function main(): Promise<void> {
  const pid = Number(process.argv[2]);
  const plan = JSON.parse(process.argv[3] ?? '{}') as Plan;
  const squatted = plan.squat ? squat(plan.squat) : [];
  const addresses = listeningAddresses(pid);
  const held: net.Socket[] = [];
  let sent = 0;
  for (const address of addresses) {
    for (let i = 0; i < plan.idle; i++) {
      const s = await connect(address);
      if (s) held.push(s);
    }
    const junk = await connect(address);
    if (junk && plan.garbage > 0) junk.write(Buffer.alloc(plan.garbage, 'zz \x00\xff\n'), () => (sent += plan.garbage));
    const long = await connect(address);
    if (long && plan.noNewlineBytes > 0) {
      long.write(Buffer.alloc(plan.noNewlineBytes, 'x'), () => (sent += plan.noNewlineBytes));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  const report = { addresses: addresses.map(String), connected: held.length, squatted, sent };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  setInterval(() => undefined, 60_000);
}

void main();
