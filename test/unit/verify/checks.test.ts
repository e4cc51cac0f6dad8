import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState, HistoryEntry } from '../../../src/domain/episode-state';
import { migrateLegacyStore } from '../../../src/legacy-migration/migrate';
import { initialState } from '../../../src/domain/episode-state';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { checkRecords } from '../../../src/verify/checks';
import { fileStoreSource } from '../../../src/verify/file-store-source';
import { ProblemCode } from '../../../src/domain/problem';
import type { Located } from '../../../src/verify/source';
import { episodeStoreSource } from '../../../src/verify/store-source';
import { verifyStore } from '../../../src/verify/verify-store';
import { succeededStep } from '../../../testkit/episode-builders';
import { legacyDirPerTest } from '../../../testkit/legacy-harness';

const AT = '2026-08-03T09:00:00Z';

/** A completed episode with one charged video job, and its matching history entry. */
function completed(id: string, key: string | null): { state: Located<EpisodeState>; history: Located<HistoryEntry> } {
  const identity = parseEpisodeId(id);
  const state: EpisodeState = {
    ...initialState(identity, key, { kind: 'test', note: 'checks' }, AT),
    status: 'completed',
    steps: {
      'video-r0': succeededStep(identity.episodeId, 'video', 0, AT, { remote_job_id: `job-${id}` }),
    },
    ledger: [
      { step: 'video', round: 0, remote_job_id: `job-${id}`, amount_cents: 500, currency: 'USD', recorded_at: AT },
    ],
    completed_at: AT,
  };
  const history: HistoryEntry = {
    schema: 'history-entry/v1',
    episode_id: state.episode_id,
    week_id: state.week_id,
    sequence: state.sequence,
    allocation_key: key,
    completed_at: AT,
    remote_jobs: [{ step: 'video', round: 0, remote_job_id: `job-${id}` }],
    ledger: structuredClone(state.ledger),
    total_cost_cents: 500,
    currency: 'USD',
    approval: null,
    media: {},
  };
  return { state: { value: state, file: `state ${id}` }, history: { value: history, file: `history ${id}` } };
}

const codes = (states: Located<EpisodeState>[], history: Located<HistoryEntry>[]) =>
  checkRecords(states, history)
    .map((p) => p.code)
    .sort();

describe('verify: generic checks over episodes, history and ledger', () => {
  it('finds nothing in consistent records', () => {
    const a = completed('2026-W32-0', 'a');
    const b = completed('2026-W32-1', 'b');
    assert.deepEqual(codes([a.state, b.state], [a.history, b.history]), []);
  });

  it('finds one problem per broken rule', () => {
    const cases: [string, (a: ReturnType<typeof completed>) => void, ProblemCode][] = [
      ['id', (a) => (a.state.value.sequence = 4), ProblemCode.IdMismatch],
      ['step key', (a) => (a.state.value.steps['video-r0']!.round = 1), ProblemCode.StepKeyMismatch],
      ['unknown job', (a) => (a.state.value.ledger[0]!.remote_job_id = 'other'), ProblemCode.LedgerUnknownJob],
      ['history total', (a) => (a.history.value.total_cost_cents = 499), ProblemCode.LedgerTotalMismatch],
      ['history currency', (a) => (a.history.value.currency = 'EUR'), ProblemCode.LedgerCurrencyMismatch],
      ['history job', (a) => (a.history.value.remote_jobs = []), ProblemCode.LedgerUnknownJob],
      [
        'history vs state',
        (a) => (a.history.value.completed_at = AT.replace('09', '10')),
        ProblemCode.HistoryStateMismatch,
      ],
    ];
    for (const [name, breakIt, code] of cases) {
      const a = completed('2026-W32-0', 'a');
      breakIt(a);
      assert.ok(codes([a.state], [a.history]).includes(code), name);
    }
  });

  it('a charged step without a remote job', () => {
    const a = completed('2026-W32-0', 'a');
    a.state.value.steps['video-r0']!.remote_job_id = null;
    // Once for the charged step record, once for its ledger entry.
    assert.deepEqual(codes([a.state], [a.history]), [
      ProblemCode.ChargeWithoutRemoteJob,
      ProblemCode.ChargeWithoutRemoteJob,
    ]);
  });

  it('duplicates: one (week, sequence) or one allocation key on two episodes', () => {
    const a = completed('2026-W32-0', 'k');
    const b = completed('2026-W32-1', 'k');
    assert.deepEqual(codes([a.state, b.state], [a.history, b.history]), [
      ProblemCode.DuplicateAllocationKey,
      ProblemCode.DuplicateAllocationKey,
    ]);
    const c = completed('2026-W32-0', 'c');
    const d = completed('2026-W32-0', 'd');
    assert.deepEqual(codes([c.state, d.state], []).filter((x) => x === ProblemCode.DuplicateSequence).length, 2);
  });

  it("a reassembly after completion is the state's alone: its job, charge and final video; anything else still counts", () => {
    const LATER = '2026-08-10T09:00:00Z';
    const file = (name: string, fill: string) => ({ path: `media/${name}.mp4`, sha256: fill.repeat(64), bytes: 10 });
    const reassembled = () => {
      const a = completed('2026-W32-0', 'a');
      a.state.value.media = { video: file('assembly-r0', 'a'), 'assembly-r0': file('assembly-r0', 'a') };
      a.history.value.media = { video: file('assembly-r0', 'a') };
      // `episodes reassemble`: assembly round 1, charged, and its output became the final video.
      const r1 = succeededStep(a.state.value.episode_id, 'assembly', 1, LATER, { remote_job_id: 'job-r1' });
      a.state.value.steps['assembly-r1'] = r1;
      a.state.value.ledger.push({
        step: 'assembly',
        round: 1,
        remote_job_id: 'job-r1',
        amount_cents: 800,
        currency: 'USD',
        recorded_at: LATER,
      });
      a.state.value.media['assembly-r1'] = file('assembly-r1', 'b');
      a.state.value.media.video = file('assembly-r1', 'b');
      return a;
    };
    const clean = reassembled();
    assert.deepEqual(codes([clean.state], [clean.history]), []);
    const cases: [string, (a: ReturnType<typeof completed>) => void][] = [
      ['a final video from no reassembly', (a) => (a.state.value.media.video = file('other', 'c'))],
      ['the final video gone', (a) => delete a.state.value.media.video],
      ['a charge before completion missing from history', (a) => (a.state.value.ledger[1]!.round = 0)],
      ['a video job started after completion', (a) => (a.state.value.steps['assembly-r1']!.step = 'video')],
      ['the history edited', (a) => (a.history.value.ledger = [])],
    ];
    for (const [name, breakIt] of cases) {
      const a = reassembled();
      breakIt(a);
      assert.ok(codes([a.state], [a.history]).includes(ProblemCode.HistoryStateMismatch), name);
    }
  });

  it("an assembly the history names is the completion's own, even with its intent dated after completed_at", () => {
    // completed_at is workflow time, and workflow time can lag the clock that dated the intent: campaign seed
    // 4816320 (PostgreSQL, replicate) completed an episode in a workflow task retried on a new worker after its sticky
    // task timed out, and the activity got completedAt from before the assembly started.
    const a = completed('2026-W32-0', 'a');
    const LATER = '2026-08-03T09:00:05Z';
    a.state.value.steps['assembly-r0'] = succeededStep(a.state.value.episode_id, 'assembly', 0, LATER, {
      remote_job_id: 'job-assembly',
    });
    const charge = { step: 'assembly' as const, round: 0, remote_job_id: 'job-assembly', amount_cents: 300 };
    a.state.value.ledger.push({ ...charge, currency: 'USD', recorded_at: LATER });
    a.history.value.ledger = structuredClone(a.state.value.ledger);
    a.history.value.remote_jobs.push({ step: 'assembly', round: 0, remote_job_id: 'job-assembly' });
    a.history.value.total_cost_cents = 800;
    assert.deepEqual(codes([a.state], [a.history]), []);
  });

  it('history and state must come in pairs once completed', () => {
    const a = completed('2026-W32-0', 'a');
    assert.deepEqual(codes([a.state], []), [ProblemCode.HistoryMissing]);
    assert.deepEqual(codes([], [a.history]), [ProblemCode.HistoryWithoutEpisode]);
  });
});

describe('verify through the EpisodeStore read interface (how a PostgreSQL store is verified)', () => {
  const given = legacyDirPerTest();

  it('agrees with the file-store check: clean after migration, a changed media file reported by both', async () => {
    const store = new FileEpisodeStore(given.dataDir);
    assert.equal((await migrateLegacyStore(store)).status, 'migrated');
    const generic = () => verifyStore(episodeStoreSource(store, { evidenceBase: given.dataDir }));
    const clean = await generic();
    assert.deepEqual(clean.problems, []);
    assert.equal(clean.episodes_checked, 2);
    assert.equal(clean.media_checked, 4);

    const file = path.join(given.dataDir, 'episodes', '2026-W30-0', 'media', 'cover.jpg');
    await fs.appendFile(file, 'x');
    for (const report of [await generic(), await verifyStore(fileStoreSource(given.dataDir))]) {
      assert.ok(report.problems.some((p) => p.code === ProblemCode.MediaSizeMismatch && p.file === file));
    }
  });
});
