/**
 * PostgreSQL for the benchmark: the tests' throwaway server (testkit/postgres.ts, stopped when this process
 * exits) or EPISODES_TEST_PG_URL. The throwaway server starts with durability off for test speed; a benchmark next to
 * an fsync floor must pay for durable commits, so on our own server fsync and synchronous_commit are switched back on
 * (both reload-time settings) before measuring. A server given by URL is left as found and its settings reported.
 */
import * as path from 'node:path';
import type { Client } from 'pg';
import { PostgresEpisodeStore } from '../src/store/postgres-store';
import { databaseUrl, freshDatabase, stopTestPostgres, testPostgresUrl, withDatabase } from '../testkit/postgres';
import type { SeedWeek } from './seed-data';

export interface BenchPostgres {
  adminUrl: string;
  /** e.g. "fsync=on, synchronous_commit=on (throwaway server, durability switched on)". */
  durability: string;
  stop(): Promise<void>;
}

/** Databases made here from a template: the helper only tracks (and drops) the ones it created itself. */
const templateCopies: string[] = [];

export async function startBenchPostgres(): Promise<BenchPostgres> {
  const ownServer = !process.env.EPISODES_TEST_PG_URL;
  const adminUrl = await testPostgresUrl();
  const stop = async () => {
    if (!ownServer) {
      await withDatabase(adminUrl, async (c) => {
        for (const name of templateCopies.splice(0)) await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      });
    }
    await stopTestPostgres();
  };
  return { adminUrl, durability: await durabilitySettings(adminUrl, ownServer), stop };
}

/** Seeding runs with whatever the server has; measuring needs durable commits on a server we own. */
export async function makeDurable(pg: BenchPostgres): Promise<void> {
  if (process.env.EPISODES_TEST_PG_URL) return;
  await withDatabase(pg.adminUrl, async (c) => {
    for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) {
      await c.query(`ALTER SYSTEM SET ${setting} = on`);
    }
    await c.query('SELECT pg_reload_conf()');
    await c.query('CHECKPOINT');
  });
  pg.durability = await durabilitySettings(pg.adminUrl, true);
}

async function durabilitySettings(url: string, ownServer: boolean): Promise<string> {
  const show = async (c: Client, name: string) => `${name}=${String((await c.query(`SHOW ${name}`)).rows[0]?.[name])}`;
  const settings = await withDatabase(url, async (c) => [await show(c, 'fsync'), await show(c, 'synchronous_commit')]);
  return `${settings.join(', ')} (${ownServer ? 'throwaway server' : 'EPISODES_TEST_PG_URL'})`;
}

/**
 * One database per size. Sizes are prefixes of one plan, so each database starts as a copy (TEMPLATE) of the next
 * smaller one and imports only the episodes it adds, through the store's own `importEpisodes`.
 */
export async function seedPostgresStores(
  pg: BenchPostgres,
  plan: readonly SeedWeek[],
  sizes: readonly number[],
  mediaRoot: string,
): Promise<Map<number, string>> {
  const urls = new Map<number, string>();
  const episodes = plan.flatMap((w) => w.episodes);
  let previous: { size: number; url: string } | undefined;
  for (const size of [...sizes].sort((a, b) => a - b)) {
    let url: string;
    if (previous) {
      const name = `bench_${size}_${process.pid}`;
      const template = new URL(previous.url).pathname.slice(1);
      await withDatabase(pg.adminUrl, (c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
      templateCopies.push(name);
      url = databaseUrl(pg.adminUrl, name);
    } else {
      url = await freshDatabase(`bench_${size}`);
    }
    const store = new PostgresEpisodeStore({ url, mediaDir: path.join(mediaRoot, String(size)) });
    try {
      const add = episodes.slice(previous?.size ?? 0, size);
      for (let i = 0; i < add.length; i += 500) {
        const batch = add.slice(i, i + 500);
        await store.importEpisodes({
          episodes: batch.map((e) => e.state),
          history: batch.flatMap((e) => (e.history ? [e.history] : [])),
        });
      }
    } finally {
      await store.close();
    }
    urls.set(size, url);
    previous = { size, url };
  }
  return urls;
}
