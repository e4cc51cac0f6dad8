/**
 * A separate OS process that allocates through the same code path as the activity (`allocateEpisodeOn`).
 * Usage: node alloc-client.js <startAtEpochMs> '<json [{key, week}]>' [unsafe variant]; prints one JSON array of
 * outcomes. The store comes from the environment (EPISODES_DATA_DIR or EPISODES_STORE_URL), as for the worker; the
 * optional third argument takes one of its protections away (unsafe-stores.ts), for the proofs.
 */
import { allocateEpisodeOn } from '../src/activities/allocation';
import { isPipelineError } from '../src/domain/errors';
import { openUnsafeStore, unsafeVariantSchema } from './unsafe-stores';
import { sleep } from './wait';

export type AllocOutcome =
  { key: string; week: string; episodeId: string; created: boolean } | { key: string; week: string; error: string };

async function main(): Promise<void> {
  const startAt = Number(process.argv[2]);
  const requests = JSON.parse(process.argv[3] ?? '[]') as { key: string; week: string }[];
  const store = openUnsafeStore(unsafeVariantSchema.optional().parse(process.argv[4]));
  await sleep(Math.max(0, startAt - Date.now()));
  const outcomes: AllocOutcome[] = [];
  for (const { key, week } of requests) {
    try {
      const r = await allocateEpisodeOn(
        store,
        { allocationKey: key, weekId: week },
        { kind: 'test', note: `pid ${process.pid}` },
      );
      outcomes.push({ key, week, episodeId: r.episodeId, created: r.created });
    } catch (e) {
      outcomes.push({ key, week, error: isPipelineError(e) ? e.type : String(e) });
    }
  }
  await store.close();
  process.stdout.write(JSON.stringify(outcomes));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
