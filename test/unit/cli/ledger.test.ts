import assert from 'node:assert/strict';
import { buildLedgerView, ledgerDiscrepancies } from '../../../src/cli/ledger-commands';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState } from '../../../src/domain/episode-state';
import { initialState } from '../../../src/domain/episode-state';
import type { Charge } from '../../../src/vendor-api/api';

const id = parseEpisodeId('2026-W32-0');
const at = '2026-08-04T09:00:00.000Z';
const episode = (ledger: EpisodeState['ledger']): EpisodeState => ({
  ...initialState(id, parseAllocationKey('k'), { kind: 'test', note: 'ledger' }, at),
  ledger,
});
const entry = (job: string, cents: number) => ({
  step: 'video' as const,
  round: 0,
  remote_job_id: job,
  amount_cents: cents,
  currency: 'USD',
  recorded_at: at,
});
const charge = (job: string, cents: number, episodeId = '2026-W32-0'): Charge => ({
  charge_id: `ch_${job}`,
  job_id: job,
  kind: 'video',
  episode_id: episodeId,
  client_ref: `${episodeId}:video:r0`,
  amount_cents: cents,
  currency: 'USD',
  at,
});

describe('ledger view (pure)', () => {
  it('totals per episode and overall; a ledger equal to the billing is clean', () => {
    const view = buildLedgerView([episode([entry('job_a', 4200), entry('job_b', 300)])], {
      charges: [charge('job_a', 4200), charge('job_b', 300)],
      withoutJournal: new Set(),
    });
    assert.equal(view.total_cents, 4500);
    assert.equal(view.episodes[0]?.total_cents, 4500);
    assert.equal(ledgerDiscrepancies(view), 0);
  });

  it('flags a charge without entry, an entry without charge and an amount mismatch', () => {
    const view = buildLedgerView([episode([entry('job_a', 4200), entry('job_ghost', 300)])], {
      charges: [charge('job_a', 4100), charge('job_lost', 800), charge('job_other', 1, '2026-W33-0')],
      withoutJournal: new Set(),
    });
    const r = view.reconciliation!;
    assert.deepEqual(
      r.unrecorded_charges.map((c) => c.job_id),
      ['job_lost'],
    );
    assert.deepEqual(
      r.unbilled_entries.map((c) => c.job_id),
      ['job_ghost'],
    );
    assert.deepEqual(r.amount_mismatches, [{ job_id: 'job_a', ledger_cents: 4200, billed_cents: 4100 }]);
    assert.equal(r.charges_checked, 2, "another episode's charges are not this view's business");
    assert.equal(ledgerDiscrepancies(view), 3);
  });

  it('a 0 line (a failure the vendor documents as unbilled) needs no charge; a vendor without journal is unverifiable', () => {
    const state = episode([entry('job_failed', 0), entry('job_metered', 950)]);
    state.steps['video-r0'] = { vendor: 'replicate:owner/model' } as EpisodeState['steps'][string];
    const view = buildLedgerView([state], { charges: [], withoutJournal: new Set(['replicate']) });
    const r = view.reconciliation!;
    assert.deepEqual(
      r.unverifiable.map((u) => [u.job_id, u.vendor]),
      [
        ['job_failed', 'replicate'],
        ['job_metered', 'replicate'],
      ],
    );
    assert.equal(ledgerDiscrepancies(view), 0);
    const native = buildLedgerView([episode([entry('job_failed', 0)])], { charges: [], withoutJournal: new Set() });
    assert.equal(ledgerDiscrepancies(native), 0, 'a 0 line is not an unbilled entry');
  });
});
