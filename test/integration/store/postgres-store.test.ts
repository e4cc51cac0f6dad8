import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DatabaseError } from 'pg';
import { allocateEpisodeOn } from '../../../src/activities/allocation';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState } from '../../../src/domain/episode-state';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import { parseWeekId } from '../../../src/domain/week-id';
import { idempotencyKey } from '../../../src/domain/names';
import { openStore } from '../../../src/store/open-store';
import { PIPELINE_LOCK_ID, PostgresEpisodeStore } from '../../../src/store/postgres-store';
import { LATEST_SCHEMA_VERSION } from '../../../src/store/postgres-migrations';
import type { AllocOutcome } from '../../../testkit/alloc-client';
import { freshDatabase, withDatabase } from '../../../testkit/postgres';
import { collect, freezeAtFailpoint, runNode, spawnNode } from '../../../testkit/processes';
import { PaidStepCall } from '../../../src/activities/paid-step-call';
import { bookkeepingDeps, stepRefOf } from '../../../testkit/frozen-writer';
import { allocationViolations, describeStoreContract, type StoreUnderTest } from '../../../testkit/store-contract';
import { sleep } from '../../../testkit/wait';
import { succeededStep } from '../../../testkit/episode-builders';

async function makePostgresStore(options: { lockTimeoutMs?: number } = {}): Promise<StoreUnderTest & { url: string }> {
  const url = await freshDatabase('store');
  const mediaDir = mkdtempSync(path.join(os.tmpdir(), 'episodes-media-'));
  const store = new PostgresEpisodeStore({ url, mediaDir, ...options });
  return {
    url,
    store,
    childEnv: { EPISODES_STORE_URL: url, EPISODES_MEDIA_DIR: mediaDir },
    cleanup: async () => {
      await store.close();
      await fs.rm(mediaDir, { recursive: true, force: true });
    },
  };
}

// Without the lock the constraints still refuse every conflicting write, but as lost (retryable) allocations: the
// contract's "breaks without the pipeline lock" test sees those. The tests below show what each layer does alone.
describeStoreContract('postgres store', () => makePostgresStore(), { lockSwitchBreaksIt: true });

describe('postgres store specifics', function () {
  this.timeout(120_000);
  const by = { kind: 'test', note: 'postgres-store' } as const;
  const W32 = parseWeekId('2026-W32');
  let t: StoreUnderTest & { url: string };
  let store: PostgresEpisodeStore;
  beforeEach(async () => {
    t = await makePostgresStore({ lockTimeoutMs: 1_000 });
    store = t.store as PostgresEpisodeStore;
  });
  afterEach(() => t.cleanup());
  const alloc = (key: string, week: string = W32) => allocateEpisodeOn(store, { allocationKey: key, weekId: week }, by);
  const sql = <T>(body: Parameters<typeof withDatabase<T>>[1]) => withDatabase(t.url, body);

  it('is what openStore returns for postgres:// and postgresql:// URLs, and its description hides the password', async () => {
    for (const scheme of ['postgres', 'postgresql']) {
      const opened = openStore({ storeUrl: t.url.replace(/^postgres(ql)?:/, `${scheme}:`) });
      try {
        assert.ok(opened instanceof PostgresEpisodeStore);
        const password = new URL(t.url).password;
        assert.ok(password.length > 0 && !opened.description.includes(password), opened.description);
        assert.equal((await opened.listEpisodes()).length, 0);
      } finally {
        await opened.close();
      }
    }
    assert.throws(
      () => openStore({ storeUrl: 'mysql://u:secret@127.0.0.1/x' }),
      (e) => isPipelineError(e, ErrorType.InvalidInput) && !e.message.includes('secret'),
    );
  });

  it('applies the migrations once, even from several processes starting together', async () => {
    const others = [0, 1, 2].map(() => new PostgresEpisodeStore({ url: t.url }));
    try {
      await Promise.all([store, ...others].map((s) => s.ready()));
      assert.equal(await store.schemaVersion(), LATEST_SCHEMA_VERSION);
      const rows = await sql((c) => c.query('SELECT version FROM schema_migrations ORDER BY version'));
      assert.deepEqual(
        rows.rows.map((r: { version: number }) => r.version),
        [...Array(LATEST_SCHEMA_VERSION).keys()].map((i) => i + 1),
      );
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });

  it('refuses a database migrated by a newer build', async () => {
    await store.ready();
    await sql((c) => c.query(`INSERT INTO schema_migrations (version, name) VALUES (999, 'future')`));
    const fresh = new PostgresEpisodeStore({ url: t.url });
    try {
      await assert.rejects(fresh.listEpisodes(), (e) => isPipelineError(e, ErrorType.InvalidState));
    } finally {
      await fresh.close();
    }
  });

  it('enforces the invariants in the schema too: unique (week, sequence), unique non-null key, id = week-sequence', async () => {
    await alloc('run-a');
    const insert = (id: string, seq: number, key: string | null) =>
      sql((c) =>
        c.query(
          `INSERT INTO episodes (episode_id, week_id, sequence, allocation_key, allocated_by, created_at, status, media_dir)
           VALUES ($1, '2026-W32', $2, $3, '{}', '2026-08-03T09:00:00.000Z', 'allocated', '/m')`,
          [id, seq, key],
        ),
      );
    const refused = (constraint: string) => (e: unknown) =>
      e instanceof DatabaseError && e.constraint === constraint && e.code?.startsWith('23') === true;
    await assert.rejects(insert('2026-W32-0', 0, 'run-z'), refused('episodes_pkey'));
    await assert.rejects(insert('2026-W32-5', 0, 'run-z'), refused('episodes_id_is_week_and_sequence'));
    await assert.rejects(insert('2026-W32-1', 1, 'run-a'), refused('episodes_allocation_key_key'));
    // Keyless (migrated) episodes may be many.
    await insert('2026-W32-1', 1, null);
    await insert('2026-W32-2', 2, null);
    assert.equal((await alloc('run-b')).episodeId, '2026-W32-3');
  });

  it('keeps state, remote jobs and ledger in their tables and gives the state back exactly', async () => {
    const id = parseEpisodeId((await alloc('run-a')).episodeId).episodeId;
    const full = (s: EpisodeState): EpisodeState => ({
      ...s,
      status: 'awaiting_approval',
      steps: {
        'video-r0': succeededStep(id, 'video', 0, '2026-08-03T09:00:01.000Z', {
          spec: { prompt: 'hello', nested: { z: 1, a: [1, 2] } },
          remote_job_id: 'job-1',
          submitted_at: '2026-08-03T09:00:02+02:00',
          quoted_cost: { amount_cents: 1250, currency: 'USD' },
          artifact: { path: 'video.mp4', sha256: 'a'.repeat(64), bytes: 10 },
        }),
        'cover-r0': {
          step: 'cover',
          round: 0,
          idempotency_key: idempotencyKey(id, 'cover', 0),
          status: 'submitted',
          intent_at: '2026-08-03T09:00:03.000Z',
          spec: {},
          remote_job_id: null,
          submitted_at: null,
          quoted_cost: null,
          artifact: null,
          charged: false,
          reconciliation: null,
          error: null,
        },
      },
      ledger: [
        {
          step: 'video',
          round: 0,
          remote_job_id: 'job-1',
          amount_cents: 1250,
          currency: 'USD',
          recorded_at: '2026-08-03T09:05:00.123456Z',
        },
        {
          step: 'cover',
          round: 0,
          remote_job_id: 'job-2',
          amount_cents: 99,
          currency: 'USD',
          recorded_at: '2026-08-03T09:06:00.000Z',
        },
      ],
      approval: { status: 'pending', by: null, at: null, notes: null },
      media: { video: { path: 'video.mp4', sha256: 'a'.repeat(64), bytes: 10 } },
      legacy: { anything: ['goes', 1] },
    });
    const written = await store.updateEpisode(id, full);
    assert.deepEqual(await store.requireEpisode(id), written);
    const counts = await sql((c) =>
      c.query(
        `SELECT (SELECT count(*)::int FROM remote_jobs WHERE episode_id = $1) AS jobs,
                (SELECT sum(amount_cents)::int FROM ledger_entries WHERE episode_id = $1) AS cents,
                (SELECT media_dir FROM episodes WHERE episode_id = $1) AS media_dir`,
        [id],
      ),
    );
    assert.deepEqual(counts.rows[0], { jobs: 2, cents: 1349, media_dir: store.mediaDir(id) });
    assert.equal(store.mediaDir(id), path.join(store.mediaRoot, id));
    // A later update replaces the rows: nothing is left behind from the previous state.
    await store.updateEpisode(id, (s) => ({ ...s, steps: {}, ledger: s.ledger.slice(0, 1) }));
    const after = await sql((c) =>
      c.query(
        `SELECT (SELECT count(*)::int FROM remote_jobs) AS jobs, (SELECT count(*)::int FROM ledger_entries) AS ledger`,
      ),
    );
    assert.deepEqual(after.rows[0], { jobs: 0, ledger: 1 });
  });

  it('reports a row that does not match the schema as StoreCorrupt', async () => {
    const id = parseEpisodeId((await alloc('run-a')).episodeId).episodeId;
    await sql((c) => c.query(`UPDATE episodes SET status = 'bogus' WHERE episode_id = $1`, [id]));
    await assert.rejects(store.getEpisode(id), (e) => isPipelineError(e, ErrorType.StoreCorrupt));
  });

  it('waits for the advisory pipeline lock, and gives up retryably (LockTimeout) when it is held too long', async () => {
    await store.ready();
    await sql(async (holder) => {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1)', [PIPELINE_LOCK_ID]);
      const t0 = Date.now();
      await assert.rejects(alloc('run-a'), (e) => isPipelineError(e, ErrorType.LockTimeout) && e.retryable);
      assert.ok(Date.now() - t0 >= 900, 'waited for the lock');
      // Released by the holder's commit: the same request now goes through.
      const pending = alloc('run-a');
      await sleep(100);
      await holder.query('COMMIT');
      assert.equal((await pending).episodeId, '2026-W32-0');
    });
  });

  it('a holder frozen inside its transaction is cut off by the server, releasing the lock; it fails retryably', async () => {
    await store.ready();
    const startAt = Date.now() + 1000;
    // The child takes the lock, then stalls 5 s between two statements (a GC pause, a stopped VM, SIGSTOP).
    const frozen = runNode(
      'testkit/alloc-client.js',
      [String(startAt), JSON.stringify([{ key: 'frozen', week: W32 }])],
      {
        ...t.childEnv,
        EPISODES_FAILPOINTS: 'allocation.decided=delay:5000',
        EPISODES_LOCK_STALE_MS: '2000',
      },
    );
    await sleep(startAt - Date.now() + 500);
    const patient = new PostgresEpisodeStore({ url: t.url, lockTimeoutMs: 20_000 });
    try {
      const t0 = Date.now();
      const mine = await allocateEpisodeOn(patient, { allocationKey: 'patient', weekId: W32 }, by);
      assert.equal(mine.episodeId, '2026-W32-0');
      assert.ok(Date.now() - t0 < 4_000, 'released after the 2 s idle-in-transaction limit, not after the stall');
      const child = await frozen;
      assert.equal(child.code, 0, `the frozen process must not crash: ${child.stderr}`);
      assert.deepEqual(JSON.parse(child.stdout), [{ key: 'frozen', week: W32, error: ErrorType.StorageFailure }]);
      assert.deepEqual(
        (await store.listEpisodes()).map((e) => e.allocation_key),
        ['patient'],
      );
    } finally {
      await patient.close();
    }
  });

  describe('a worker process frozen (SIGSTOP) inside the lock: the transaction is the fence', () => {
    // The advisory lock belongs to the transaction: while the worker is stopped its session sits idle in that
    // transaction until the server ends it (idle_in_transaction_session_timeout = the lock's staleness), which rolls
    // back everything it wrote and releases the lock. After SIGCONT its next statement (or COMMIT) finds the session
    // gone. Without that timeout it would keep the lock and make everyone wait: never two holders either way.
    const frozenEnv = (failpoints: string) => ({
      ...t.childEnv,
      EPISODES_FAILPOINTS: failpoints,
      EPISODES_LOCK_STALE_MS: '2000',
    });

    it('frozen at allocation.decided: its insert is refused after SIGCONT; the next holder allocates', async () => {
      await store.ready();
      const frozen = spawnNode('testkit/alloc-client.js', ['0', JSON.stringify([{ key: 'frozen', week: W32 }])], {
        ...frozenEnv('allocation.decided=delay:500'),
      });
      const result = collect(frozen);
      await freezeAtFailpoint(frozen, 'allocation.decided');
      const patient = new PostgresEpisodeStore({ url: t.url, lockTimeoutMs: 30_000 });
      try {
        assert.equal(
          (await allocateEpisodeOn(patient, { allocationKey: 'patient', weekId: W32 }, by)).episodeId,
          '2026-W32-0',
        );
      } finally {
        await patient.close();
      }
      frozen.kill('SIGCONT');
      const r = await result;
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), [{ key: 'frozen', week: W32, error: ErrorType.StorageFailure }]);
      assert.deepEqual(
        (await store.listEpisodes()).map((e) => `${e.episode_id} ${e.allocation_key}`),
        ['2026-W32-0 patient'],
      );
    });

    for (const kind of ['step', 'charge'] as const) {
      it(`frozen inside an episode update (${kind === 'step' ? 'a step record' : 'a charge'}): refused after SIGCONT; the next holder's write stands`, async () => {
        const { episodeId } = await alloc('run');
        // updateEpisode takes the pipeline lock in its transaction; allocation.lock-taken fires right after.
        const frozen = spawnNode('testkit/frozen-writer.js', [episodeId, kind, 'video-r0'], {
          ...frozenEnv('allocation.lock-taken=delay:500'),
        });
        const result = collect(frozen);
        await freezeAtFailpoint(frozen, 'allocation.lock-taken');
        const cover = stepRefOf(episodeId, 'cover-r0');
        const patient = new PostgresEpisodeStore({ url: t.url, lockTimeoutMs: 30_000 });
        try {
          const call = new PaidStepCall(bookkeepingDeps(patient), cover, undefined);
          await call.save(() => call.bareRecord({}));
        } finally {
          await patient.close();
        }
        frozen.kill('SIGCONT');
        const r = await result;
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, ErrorType.StorageFailure, 'the frozen write refused (its session was ended)');
        const state = await store.getEpisode(parseEpisodeId(episodeId).episodeId);
        assert.deepEqual(
          Object.keys(state!.steps),
          ['cover-r0'],
          "the next holder's write stands, the frozen one is not in",
        );
        assert.deepEqual(state!.ledger, []);
      });
    }
  });

  it('maps an unreachable server to a retryable StorageFailure', async () => {
    const url = new URL(t.url);
    url.port = '1'; // nothing listens on port 1
    const dead = new PostgresEpisodeStore({ url: url.toString() });
    try {
      const retryableFailure = (e: unknown) => isPipelineError(e, ErrorType.StorageFailure) && e.retryable;
      await assert.rejects(allocateEpisodeOn(dead, { allocationKey: 'run-a', weekId: W32 }, by), retryableFailure);
      await assert.rejects(dead.listEpisodes(), retryableFailure);
    } finally {
      await dead.close();
    }
  });

  describe('the two layers, each alone (4 processes racing without the pipeline lock)', function () {
    const keys = [...Array(12).keys()].map((k) => `run-${k}`);

    async function raceWithoutLock(): Promise<AllocOutcome[]> {
      const startAt = Date.now() + 1500;
      // Every process asks for every key, each in a different order: many collisions on keys and sequences.
      const runs = [0, 1, 2, 3].map((p) =>
        runNode(
          'testkit/alloc-client.js',
          [
            String(startAt),
            JSON.stringify(keys.map((_, i) => ({ key: keys[(i + 3 * p) % 12], week: W32 }))),
            'no-lock',
          ],
          { ...t.childEnv, EPISODES_FAILPOINTS: 'allocation.decided=delay:40' },
        ),
      );
      return (await Promise.all(runs)).flatMap((r) => {
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as AllocOutcome[];
      });
    }

    it('constraints alone: conflicting writes are refused (retryable, nothing written); retries complete 0..11', async () => {
      await store.ready();
      const outcomes = await raceWithoutLock();
      const errors = outcomes.filter((o) => 'error' in o).map((o) => ('error' in o ? o.error : ''));
      assert.ok(errors.length > 0, 'the race must have happened for this test to mean anything');
      assert.deepEqual([...new Set(errors)], [ErrorType.LockCompromised]);
      // What Temporal's activity retry does: ask again, now with the lock.
      const retried: AllocOutcome[] = [];
      for (const o of outcomes.filter((x) => 'error' in x)) {
        const r = await alloc(o.key);
        retried.push({ key: o.key, week: o.week, episodeId: r.episodeId, created: r.created });
      }
      const settled = [...outcomes.filter((o) => !('error' in o)), ...retried];
      assert.deepEqual(allocationViolations(settled, await store.listEpisodes({ weekId: W32 })), []);
    });

    it('neither lock nor constraints: duplicates are stored (shows the test above can fail)', async () => {
      await store.ready();
      await sql((c) =>
        c.query(
          `ALTER TABLE episodes DROP CONSTRAINT episodes_week_sequence_key,
                                DROP CONSTRAINT episodes_allocation_key_key,
                                DROP CONSTRAINT episodes_pkey CASCADE`,
        ),
      );
      const outcomes = await raceWithoutLock();
      const stored = await store.listEpisodes({ weekId: W32 });
      assert.ok(new Set(stored.map((s) => s.sequence)).size < stored.length, 'expected duplicate sequences');
      assert.ok(allocationViolations(outcomes, stored).length > 0);
    });
  });
});
