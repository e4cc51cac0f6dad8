/**
 * A separate OS process that makes one bookkeeping write of an episode under its lock, through the activities' own
 * code: a step record (`saveStep`, as submission saves an intent) or a charge (`charged`, as the wait writes one).
 * Usage: node frozen-writer.js <episode_id> step|charge <step key, e.g. video-r0>; prints `ok` or the error's type.
 * The store and EPISODES_FAILPOINTS come from the environment; the lock tests freeze it inside the write.
 */
import { charged } from '../src/activities/paid-step-settle';
import { PaidStepCall, stepRef, type PaidStepDeps, type StepRef } from '../src/activities/paid-step-call';
import { parseEpisodeId } from '../src/domain/episode-id';
import { isPipelineError } from '../src/domain/errors';
import { paidStepSchema } from '../src/domain/paid-step';
import type { EpisodeStore } from '../src/store/episode-store';
import { openStore } from '../src/store/open-store';

/** The step `key` (`video-r0`) of episode `raw`, as the paid activities name it. */
export function stepRefOf(raw: string, key: string): StepRef {
  const { episodeId: id } = parseEpisodeId(raw);
  const [, name, round] = /^(.+)-r(\d+)$/.exec(key) ?? [];
  return stepRef(id, paidStepSchema.parse(name), Number(round));
}

/** A vendor job of that step, finished and charged 3.00 USD (a failed one: no artifact to keep on disk). */
export function jobOf(at: StepRef, jobId: string) {
  return {
    job_id: jobId,
    kind: at.step,
    episode_id: at.id,
    status: 'failed' as const,
    cost: { amount_cents: 300, currency: 'USD' },
    artifact: null,
    client_ref: at.ref,
    accepted_at: new Date().toISOString(),
  };
}

/** Paid-step deps for writes that never reach a vendor (opening one fails the test). */
export function bookkeepingDeps(store: EpisodeStore): PaidStepDeps {
  return {
    store,
    budgetCents: 0,
    vendors: {
      assigned: () => 'native',
      profiles: () => ({}),
      open: () => Promise.reject(new Error('a bookkeeping write must not open a vendor')),
      openCallbacks: () => Promise.reject(new Error('a bookkeeping write must not open a vendor')),
    },
  };
}

async function main(): Promise<void> {
  const [raw = '', kind = '', key = ''] = process.argv.slice(2);
  const at = stepRefOf(raw, key);
  const store = openStore();
  try {
    const call = new PaidStepCall(bookkeepingDeps(store), at, undefined);
    if (kind === 'step') await call.save(() => call.bareRecord({}));
    else if (kind === 'charge') {
      const job = jobOf(at, `job-${process.pid}`);
      await store.updateEpisode(at.id, (s) => charged(s, { call, job, cost: job.cost, vouched: true }, null, 'failed'));
    } else throw new Error(`unknown write ${kind}`);
    process.stdout.write('ok');
  } catch (e) {
    process.stdout.write(isPipelineError(e) ? e.type : String(e));
  } finally {
    await store.close();
  }
}

if (require.main === module) void main();
