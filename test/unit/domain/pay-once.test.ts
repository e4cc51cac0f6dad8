import assert from 'node:assert/strict';
import {
  afterLookup,
  committedCents,
  ledgerCost,
  mayHaveSent,
  onCallback,
  reserveCents,
  type LookupFacts,
} from '../../../src/domain/pay-once';
import type { EpisodeState, StepRecord } from '../../../src/domain/episode-state';
import type { VendorProfile } from '../../../src/domain/vendor-profile';
import { falProfile } from '../../../src/vendors/fal';
import { NATIVE_PROFILE } from '../../../src/vendors/native';
import { replicateProfile } from '../../../src/vendors/replicate';

/** What the paid step does after each lookup answer, per profile: one table each. */
interface ProfileTable {
  profile: VendorProfile;
  /** [facts, verdict kind] */
  lookups: [LookupFacts, 'adopt' | 'send' | 'park'][];
  /** Ledger amount of a failed job the vendor reports at 300 cents. */
  failedJobCents: number;
  /** What a video step holds against the budget when its price is 4200. */
  videoReserveCents: number;
}

const TABLES: Record<string, ProfileTable> = {
  native: {
    profile: NATIVE_PROFILE,
    lookups: [
      [{ jobs: 1, billed: false }, 'adopt'],
      [{ jobs: 0, billed: false }, 'send'],
      [{ jobs: 0, billed: true }, 'park'],
      [{ jobs: 2, billed: true }, 'park'],
      [{ unsupported: true }, 'park'],
    ],
    failedJobCents: 300,
    videoReserveCents: 4200,
  },
  fal: {
    profile: falProfile({ video: 6000, cover: 500, rework: 3000, assembly: 1500 }),
    lookups: [
      [{ jobs: 1, billed: false }, 'adopt'],
      // Its listing may not show a request it queued: "none listed" never means "send".
      [{ jobs: 0, billed: false }, 'park'],
      [{ jobs: 0, billed: true }, 'park'],
      [{ jobs: 2, billed: true }, 'park'],
      [{ unsupported: true }, 'park'],
    ],
    // A failure's amount is what the billing events say (a 422 may be billed; the adapter reports 0 for a 5xx).
    failedJobCents: 300,
    videoReserveCents: 6000,
  },
  replicate: {
    profile: replicateProfile({ video: 1000, cover: 300, rework: 1000, assembly: 500 }),
    lookups: [
      [{ jobs: 1, billed: false }, 'adopt'],
      // A prediction missing from the list may still exist and be billed (the docs are silent on lost predictions;
      // campaign seed 61204, file store, mixed, paid one rework twice): "none listed" never means "send".
      [{ jobs: 0, billed: false }, 'park'],
      [{ jobs: 2, billed: false }, 'park'],
      // The adapter answers `unsupported` when a listed prediction's correlation is unreadable (data_removed).
      [{ unsupported: true }, 'park'],
    ],
    failedJobCents: 300,
    videoReserveCents: 1000,
  },
};

const verdictKind = (v: ReturnType<typeof afterLookup>) => ('adopt' in v ? 'adopt' : 'send' in v ? 'send' : 'park');

describe('pay-once rules (pure), one table per vendor profile', () => {
  for (const [name, t] of Object.entries(TABLES)) {
    describe(name, () => {
      for (const [facts, expected] of t.lookups) {
        it(`lookup ${JSON.stringify(facts)} → ${expected}`, () => {
          const verdict = afterLookup(t.profile, facts);
          assert.equal(verdictKind(verdict), expected);
          if ('park' in verdict) assert.match(verdict.park, /^[^\n]+$/, 'a one-line reason');
        });
      }
      it(`a failed job is ledgered at ${t.failedJobCents}`, () => {
        const cost = ledgerCost(t.profile, { status: 'failed', cost: { amount_cents: 300, currency: 'USD' } });
        assert.deepEqual(cost, { amount_cents: t.failedJobCents, currency: 'USD' });
      });
      it(`a video step holds ${t.videoReserveCents} of the budget until it is charged`, () => {
        assert.equal(reserveCents(t.profile, 'video', { amount_cents: 4200, currency: 'USD' }), t.videoReserveCents);
      });
    });
  }

  it('a finished job whose cost the vendor does not report parks, never guesses', () => {
    const cost = ledgerCost(NATIVE_PROFILE, { status: 'succeeded', cost: null });
    assert.ok('park' in cost);
  });

  it('a retry, or an intent saved and not settled, may have sent: look up first', () => {
    const record = (status: StepRecord['status']) => ({ status }) as StepRecord;
    assert.equal(mayHaveSent(undefined, 1), false);
    assert.equal(mayHaveSent(record('not_submitted'), 1), false);
    assert.equal(mayHaveSent(record('intent'), 1), true);
    assert.equal(mayHaveSent(record('not_submitted'), 2), true, 'a restore can take the record back an attempt');
  });

  it('committed money: ledger lines, plus accepted jobs not charged at their quote or, unknown, their reserve', () => {
    const step = (fields: Partial<StepRecord>) => ({
      remote_job_id: 'j',
      charged: false,
      quoted_cost: null,
      ...fields,
    });
    const state = {
      ledger: [{ amount_cents: 100 }],
      steps: {
        a: step({ quoted_cost: { amount_cents: 20, currency: 'USD' } }),
        b: step({ reserved_cents: 3 }),
        c: step({ charged: true, quoted_cost: { amount_cents: 100, currency: 'USD' } }),
        d: step({ remote_job_id: null, reserved_cents: 1000 }),
      },
    } as unknown as EpisodeState;
    assert.equal(committedCents(state), 123);
  });
});

describe('vendor callbacks (pure): applied at most once per job, never replacing a reference', () => {
  const record = (fields: Partial<StepRecord>) => ({ status: 'intent', remote_job_id: null, ...fields }) as StepRecord;
  it('fills an empty reference; a parked step is reconciled to it', () => {
    assert.deepEqual(onCallback(record({}), 'j1'), { adopt: true, wasParked: false });
    assert.deepEqual(onCallback(record({ status: 'needs_reconciliation' }), 'j1'), { adopt: true, wasParked: true });
  });
  it('a redelivered, late or duplicate callback for the same job changes nothing', () => {
    assert.deepEqual(onCallback(record({ status: 'succeeded', remote_job_id: 'j1' }), 'j1'), { duplicate: true });
  });
  it('another job for a step that has one, or a step the store does not know, is refused', () => {
    assert.ok('refuse' in onCallback(record({ status: 'submitted', remote_job_id: 'j1' }), 'j2'));
    assert.ok('refuse' in onCallback(undefined, 'j1'));
  });
});
