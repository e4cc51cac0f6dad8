import assert from 'node:assert/strict';
import {
  FAULT_KINDS,
  freezesAtAllocations,
  generatePlan,
  planSchema,
  targetsOf,
  VENDOR_FAULT_ADAPTERS,
  type FaultKind,
} from '../../../campaign/plan';
import { adaptersOf, assignmentOf, VENDOR_CHOICES } from '../../../campaign/vendors';
import { SMOKE_VENDORS } from '../../../testkit/campaign-smoke';

const plan = (vendor: (typeof VENDOR_CHOICES)[number]) =>
  generatePlan({ seed: 5, store: 'file', vendor, weeks: 8, perWeek: 2, faults: 100, workers: 3 });

describe('campaign plan per vendor', () => {
  it('the smoke campaign in npm test draws from every adapter choice', () => {
    assert.deepEqual([...SMOKE_VENDORS].sort(), [...VENDOR_CHOICES].sort());
  });

  it('mixed puts every adapter on some kind; the single choices put every kind on theirs', () => {
    assert.deepEqual(adaptersOf('mixed'), ['native', 'fal', 'replicate']);
    assert.deepEqual(assignmentOf('mixed'), { video: 'fal', cover: 'native', rework: 'replicate', assembly: 'fal' });
    for (const v of ['native', 'fal', 'replicate'] as const) assert.deepEqual(adaptersOf(v), [v]);
  });

  it('a vendor fault is planned only for an adapter whose simulator can show it, and names that adapter', () => {
    for (const vendor of VENDOR_CHOICES) {
      const p = plan(vendor);
      const adapters = adaptersOf(vendor);
      for (const f of p.faults) {
        const can = VENDOR_FAULT_ADAPTERS[f.kind];
        if (!can) continue;
        const target = f.target ?? 'native';
        assert.ok(adapters.includes(target) && can.includes(target), `${vendor}: ${f.id} on ${target}`);
        if (f.keysIgnored) assert.equal(target, 'native', `${f.id}: only the native vendor has keys to ignore`);
      }
      const planned = new Set(p.faults.map((f) => f.kind));
      for (const kind of FAULT_KINDS.filter((k) => !k.startsWith('pg-') && k !== 'store-restore')) {
        const applies = targetsOf(kind, vendor)?.length !== 0;
        assert.equal(planned.has(kind), applies, `${vendor}: ${kind} planned = applies`);
      }
    }
  });

  it('native plans are those before --vendor: no target, none of the kinds the native vendor cannot show', () => {
    const p = plan('native');
    assert.equal(p.vendor, 'native');
    assert.ok(p.faults.every((f) => f.target === undefined));
    const nativeCannot: FaultKind[] = ['vendor-gateway-5xx', 'vendor-expired', 'vendor-metered', 'webhook-twice'];
    assert.ok(p.faults.every((f) => !nativeCannot.includes(f.kind)));
    const { vendor: _vendor, ...before } = p;
    assert.equal(planSchema.parse(before).vendor, 'native', 'a plan.json written before --vendor replays on native');
  });

  it('fal plans no completion reported twice to a poll (its duplicate is the webhook); replicate no slow job', () => {
    assert.ok(!plan('fal').faults.some((f) => f.kind === 'vendor-repeat'));
    assert.ok(!plan('replicate').faults.some((f) => f.kind === 'vendor-repeat' || f.kind === 'vendor-slow'));
    assert.ok(plan('mixed').faults.some((f) => f.kind === 'vendor-repeat' && f.target === 'native'));
  });

  it('the no-fence proof aims every worker-freeze at a wave, at a commit point; the rest of the plan is the same', () => {
    const drawn = plan('native');
    const aimed = freezesAtAllocations(drawn);
    assert.ok(planSchema.safeParse(aimed).success);
    const freezes = aimed.faults.filter((f) => f.kind === 'worker-freeze');
    assert.ok(freezes.length > 1);
    for (const f of freezes) assert.ok('wave' in f.trigger && f.atStagedCommit === true, f.id);
    assert.deepEqual(new Set(freezes.map((f) => ('wave' in f.trigger ? f.trigger.wave : -1))).size, drawn.waves.length);
    const others = (p: typeof drawn) => p.faults.filter((f) => f.kind !== 'worker-freeze');
    assert.deepEqual(others(aimed), others(drawn));
    assert.deepEqual({ ...aimed, faults: [] }, { ...drawn, faults: [] });
  });

  it('at most one worker kill at the allocations of each wave (a second one would arm after they are over)', () => {
    for (const [weeks, seed] of [
      [4, 4242],
      [8, 5],
      [52, 12565],
    ] as const) {
      const p = generatePlan({ seed, store: 'postgres', vendor: 'mixed', weeks, perWeek: 2, faults: 100, workers: 3 });
      const waves = p.faults.flatMap((f) => (f.kind === 'worker-kill' && 'wave' in f.trigger ? [f.trigger.wave] : []));
      assert.ok(waves.length > 0, `${weeks} weeks: some allocation kill`);
      assert.equal(new Set(waves).size, waves.length, `${weeks} weeks: allocation kills at waves ${waves.join(', ')}`);
    }
  });
});
