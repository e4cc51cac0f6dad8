/**
 * What the pipeline lock costs: every allocation of the whole fleet passes through it, so its hold time bounds the
 * fleet's allocation rate. docs/deploy.md quotes this output.
 *
 *   npm run build && node dist/bench/pipeline-lock.js [--clients 4] [--per-client 100]
 *
 * For each store: one client allocating alone (latency), then N clients at once into one week, then N clients into N
 * different weeks (the lock is pipeline-wide, so different weeks still queue behind each other). Clients are separate
 * store instances (separate connections, as separate hosts would have); correctness is checked after every race.
 * PostgreSQL: the tests' throwaway server with fsync and synchronous_commit switched on (or EPISODES_TEST_PG_URL, as
 * found). The file store: a directory under the system temp dir.
 */
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { allocateEpisodeOn } from '../src/activities/allocation';
import { formatWeekId } from '../src/domain/week-id';
import type { EpisodeStore } from '../src/store/episode-store';
import { FileEpisodeStore } from '../src/store/file-store';
import { PostgresEpisodeStore } from '../src/store/postgres-store';
import { freshDatabase, stopTestPostgres, testPostgresUrl, withDatabase } from '../testkit/postgres';
import { sleep } from '../testkit/wait';

interface Row {
  store: string;
  scenario: string;
  allocations: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { clients: { type: 'string', default: '4' }, 'per-client': { type: 'string', default: '100' } },
  });
  const clients = Number(values.clients);
  const perClient = Number(values['per-client']);
  const rows: Row[] = [];
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lock-bench-'));
  try {
    const durability = await durablePostgres();
    for (const kind of ['file', 'postgres'] as const) {
      const open = await storeFactory(kind, tmp);
      rows.push(await race(kind, 'alone, one week', [open()], perClient * 2, () => 0));
      rows.push(await race(kind, `${clients} clients, one week`, times(clients, open), perClient, () => 1));
      rows.push(
        await race(kind, `${clients} clients, ${clients} weeks`, times(clients, open), perClient, (c) => 2 + c),
      );
    }
    console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}, node ${process.version}`);
    console.log(`postgres: ${durability}`);
    console.log('| store | scenario | allocations | allocations/s | p50 ms | p99 ms |');
    console.log('| --- | --- | ---: | ---: | ---: | ---: |');
    for (const r of rows) {
      console.log(
        `| ${r.store} | ${r.scenario} | ${r.allocations} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ` +
          `${r.p99.toFixed(2)} |`,
      );
    }
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
    await stopTestPostgres();
  }
}

/** Every client allocates `perClient` new keys at once; checks that each week got exactly 0..n-1. */
async function race(
  kind: string,
  scenario: string,
  stores: EpisodeStore[],
  perClient: number,
  weekOf: (client: number) => number,
): Promise<Row> {
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    stores.map(async (store, c) => {
      for (let i = 0; i < perClient; i++) {
        const start = performance.now();
        await allocateEpisodeOn(
          store,
          { allocationKey: `${scenario}-${c}-${i}`, weekId: formatWeekId(2030, 1 + weekOf(c)) },
          { kind: 'test', note: 'bench' },
        );
        latencies.push(performance.now() - start);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const byWeek = new Map<string, number[]>();
  for (const e of await stores[0]!.listEpisodes())
    byWeek.set(e.week_id, [...(byWeek.get(e.week_id) ?? []), e.sequence]);
  for (const [week, seqs] of byWeek) {
    if (seqs.some((s, i) => s !== i)) throw new Error(`${kind} ${scenario}: week ${week} is not contiguous`);
  }
  await Promise.all(stores.map((s) => s.close()));
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.max(0, Math.ceil((p / 100) * latencies.length) - 1)]!;
  const allocations = latencies.length;
  return { store: kind, scenario, allocations, seconds, perSecond: allocations / seconds, p50: pct(50), p99: pct(99) };
}

/** A fresh, empty store per scenario; `open()` gives another client of that same store. */
async function storeFactory(kind: 'file' | 'postgres', tmp: string): Promise<() => EpisodeStore> {
  if (kind === 'file') {
    const dir = mkdtempSync(path.join(tmp, 'file-'));
    return () => new FileEpisodeStore(dir);
  }
  const url = await freshDatabase('bench');
  const media = mkdtempSync(path.join(tmp, 'media-'));
  const first = new PostgresEpisodeStore({ url, mediaDir: media });
  await first.ready();
  await first.close();
  return () => new PostgresEpisodeStore({ url, mediaDir: media, poolSize: 2 });
}

/** The throwaway server trades durability for test speed; a cost worth quoting must include the commit's fsync. */
async function durablePostgres(): Promise<string> {
  const url = await testPostgresUrl();
  const own = !process.env.EPISODES_TEST_PG_URL;
  return withDatabase(url, async (c) => {
    if (own) {
      for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) {
        await c.query(`ALTER SYSTEM SET ${setting} = on`);
      }
      await c.query('SELECT pg_reload_conf()');
      // Backends apply a reload at their next command after the signal: give it a moment before reading it back.
      await sleep(500);
    }
    const show = async (name: string) => `${name}=${String((await c.query(`SHOW ${name}`)).rows[0]?.[name])}`;
    return `${await show('fsync')}, ${await show('synchronous_commit')} (${own ? 'throwaway server' : 'given URL'})`;
  });
}

function times<T>(n: number, make: () => T): T[] {
  return Array.from({ length: n }, make);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
