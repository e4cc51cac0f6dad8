/**
 * Run as another user (`nobody`) by test/integration/security/lock-peers.test.ts: tries every way into a store's lock and prints
 * one JSON object, each way with `ok` or the error code it met. Usage: node lock-intruder.js <data dir> <holder pid> '<json addresses>'
 */
import { mkdirSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { allocateEpisodeOn } from '../src/activities/allocation';
import { isPipelineError } from '../src/domain/errors';
import { FileEpisodeStore } from '../src/store/file-store';

function attempt(run: () => unknown): string {
  try {
    run();
    return 'ok';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? String(e);
  }
}

/** Connects to each socket the holder listens on (found by the test, which may read the holder's fds). */
async function connectAll(addresses: string[]): Promise<string> {
  if (addresses.length === 0) return 'none listening';
  const results = await Promise.all(
    addresses.map(
      (a) =>
        new Promise<string>((resolve) => {
          const s = /^\d+$/.test(a) ? net.connect(Number(a), '127.0.0.1') : net.connect(a);
          s.on('connect', () => (s.destroy(), resolve('ok')));
          s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
        }),
    ),
  );
  return results.includes('ok') ? 'ok' : results.join(',');
}

async function main(): Promise<void> {
  const [dir, pid] = [process.argv[2]!, Number(process.argv[3])];
  const addresses = JSON.parse(process.argv[4] ?? '[]') as string[];
  const lock = path.join(dir, 'pipeline.lock');
  const report: Record<string, string> = {
    'list the data dir': attempt(() => readdirSync(dir)),
    'list the lock': attempt(() => readdirSync(lock)),
    'create a lock': attempt(() => mkdirSync(path.join(dir, 'other.lock'))),
    'refresh the heartbeat': attempt(() => utimesSync(lock, new Date(0), new Date(0))),
    'remove the lock': attempt(() => rmSync(lock, { recursive: true })),
    'enter the takeover mutex': attempt(() => mkdirSync(`${lock}.reclaim`)),
    'signal the holder': attempt(() => process.kill(pid, 'SIGSTOP')),
  };
  report['connect to a socket of the holder'] = await connectAll(addresses);
  try {
    await allocateEpisodeOn(
      new FileEpisodeStore(dir),
      { allocationKey: 'nobody', weekId: '2026-W32' },
      {
        kind: 'test',
        note: 'nobody',
      },
    );
    report.allocate = 'ok';
  } catch (e) {
    report.allocate = isPipelineError(e) ? e.type : String(e);
  }
  process.stdout.write(JSON.stringify(report));
}

void main();
