/**
 * The checker the reliability tests rely on can fail: each damage below breaks one invariant, and `assertInvariants`
 * must reject it. Without these, a clean crash matrix could mean a blind checker.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAllocationKey } from '../../src/domain/allocation-key';
import { parseWeekId } from '../../src/domain/week-id';
import { FileEpisodeStore } from '../../src/store/file-store';
import { VendorClient } from '../../src/vendor-api/client';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { WORKFLOW_TEST_API_KEY, startTestVendor } from '../../testkit/deps';
import { assertInvariants } from '../../testkit/reliability';

describe('assertInvariants: each invariant fails on damage that breaks it', function () {
  this.timeout(60_000);
  let dir: string;
  let store: FileEpisodeStore;
  let vendor: VendorSimulator;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'invariants-'));
    store = new FileEpisodeStore(dir);
    vendor = await startTestVendor();
    for (const key of ['k0', 'k1']) {
      await store.allocate({
        allocationKey: parseAllocationKey(key),
        weekId: parseWeekId('2026-W40'),
        allocatedBy: { kind: 'test', note: 'invariants' },
      });
    }
  });
  afterEach(async () => {
    await vendor.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const charge = (ref: string) =>
    new VendorClient({ baseUrl: vendor.url, apiKey: WORKFLOW_TEST_API_KEY }).submitJob(
      { kind: 'video', episode_id: '2026-W40-0', spec: {} },
      ref,
    );

  it('an undamaged store passes and is counted', async () => {
    const counts = await assertInvariants(dir, vendor, { keys: ['k0', 'k1'] });
    assert.deepEqual(
      [counts.episodes, counts.weeks, counts.charges, counts.duplicateEpisodes, counts.chargesLost],
      [2, 1, 0, 0, 0],
    );
  });

  it('a lost run: a key without an episode', async () => {
    await assert.rejects(assertInvariants(dir, vendor, { keys: ['k0', 'k1', 'k2'] }), /no lost run/);
  });

  it('one allocation key on two episodes', async () => {
    const index = path.join(dir, 'index', 'weeks', '2026-W40.json');
    const state = path.join(dir, 'episodes', '2026-W40-1', 'state.json');
    for (const file of [index, state]) {
      await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replaceAll('"k1"', '"k0"'));
    }
    await assert.rejects(assertInvariants(dir, vendor), /duplicate episodes: k0 ×2/);
  });

  it('a charge the ledger does not record', async () => {
    await charge('2026-W40-0:video:r0');
    await assert.rejects(assertInvariants(dir, vendor), /charges the ledger does not record/);
  });

  it('two charges for one (episode, step, round)', async () => {
    vendor.setFaults({ noIdempotency: true });
    await charge('2026-W40-0:video:r0');
    await charge('2026-W40-0:video:r0');
    await assert.rejects(assertInvariants(dir, vendor), /at most one charge per \(episode, step, round\)/);
  });

  it('a problem `episodes verify` reports', async () => {
    await fs.mkdir(path.join(dir, 'episodes', '2026-W40-7'));
    await assert.rejects(assertInvariants(dir, vendor), /episodes verify finds no problem/);
  });

  it('a leftover pipeline lock', async () => {
    await fs.mkdir(path.join(dir, 'pipeline.lock'));
    await assert.rejects(assertInvariants(dir, vendor), /leftover lock/);
  });

  it('a completed run is required when asked for', async () => {
    await assert.rejects(assertInvariants(dir, vendor, { allCompleted: true }), /2026-W40-0 completed/);
  });
});
