/**
 * The campaign's plan: everything a run does, generated from the seed and saved (plan.json) before anything runs, so
 * that `--replay plan.json` runs the same year. Faults fire on logical events only: the n-th submission the vendor
 * accepts, the start of a wave, a failpoint's n-th hit in a worker.
 */
import { z } from 'zod';
import { FAILPOINT_NAMES, type FailpointName } from '../src/failpoints';
import { formatWeekId, isoWeeksInYear } from '../src/domain/week-id';
import { seededRandom } from '../src/vendor-sim/faults';
import { ADAPTERS, adaptersOf, VENDOR_CHOICES, type AdapterName, type VendorChoice } from './vendors';

export const STORE_KINDS = ['file', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export const FAULT_KINDS = [
  'worker-kill',
  'workers-kill-all',
  'worker-freeze',
  'pg-restart',
  'pg-terminate',
  'pg-failover',
  'store-restore',
  'vendor-outage',
  'vendor-drop',
  'vendor-lose',
  'vendor-slow',
  'vendor-repeat',
  'vendor-gateway-5xx',
  'vendor-expired',
  'vendor-metered',
  'webhook-twice',
  'webhook-late',
  'webhook-never',
  'temporal-restart',
  'webhook-down',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
const POSTGRES_ONLY: readonly FaultKind[] = ['pg-restart', 'pg-terminate', 'pg-failover'];

/**
 * The adapters whose simulator can show each vendor fault (docs/reliability.md, "The campaign per vendor"); a kind
 * none of the run's adapters can show is not planned. The native vendor promises that a 5xx means nothing happened,
 * keeps its artifacts, quotes a fixed price and calls no one back; fal and Replicate have no fault that reports a
 * completion twice to a poll (their duplicate is the webhook), and the Replicate simulator none that slows a job.
 * Webhook kinds need the workers to take callbacks, which the campaign sets up whenever fal or Replicate is used.
 */
export const VENDOR_FAULT_ADAPTERS: Partial<Record<FaultKind, readonly AdapterName[]>> = {
  'vendor-outage': ['native', 'fal', 'replicate'],
  'vendor-drop': ['native', 'fal', 'replicate'],
  'vendor-lose': ['native', 'fal', 'replicate'],
  'vendor-slow': ['native', 'fal'],
  'vendor-repeat': ['native'],
  'vendor-gateway-5xx': ['fal', 'replicate'],
  'vendor-expired': ['fal', 'replicate'],
  'vendor-metered': ['fal', 'replicate'],
  'webhook-twice': ['fal', 'replicate'],
  'webhook-late': ['fal', 'replicate'],
  'webhook-never': ['fal', 'replicate'],
};

/** The adapters of `vendor` a fault of `kind` can be injected into; null: not a vendor fault (any run). */
export function targetsOf(kind: FaultKind, vendor: VendorChoice): AdapterName[] | null {
  const can = VENDOR_FAULT_ADAPTERS[kind];
  return can ? adaptersOf(vendor).filter((a) => can.includes(a)) : null;
}

/** What each kind is, for the report. */
export const FAULT_TITLES: Record<FaultKind, string> = {
  'worker-kill': 'worker SIGKILL at a failpoint',
  'workers-kill-all': 'all workers SIGKILLed at once',
  'worker-freeze': 'worker SIGSTOPped past the lock stale time, holding a lock',
  'pg-restart': 'PostgreSQL immediate restart',
  'pg-terminate': 'PostgreSQL sessions terminated',
  'pg-failover': 'failover to an async standby that lost commits',
  'store-restore': 'restore from an earlier backup',
  'vendor-outage': 'vendor outage (503s)',
  'vendor-drop': 'charge whose reply is dropped',
  'vendor-lose': 'job the vendor loses after accepting it',
  'vendor-slow': 'slow completion',
  'vendor-repeat': 'completion reported twice',
  'vendor-gateway-5xx': 'gateway 5xx after the job was queued',
  'vendor-expired': 'output URL expired before the fetch',
  'vendor-metered': 'metered cost different from the estimate',
  'webhook-twice': 'vendor webhook delivered twice',
  'webhook-late': 'vendor webhook delivered late',
  'webhook-never': 'vendor webhook never delivered',
  'temporal-restart': 'Temporal dev server restart',
  'webhook-down': 'review webhook receiver down',
};

/** Relative frequency of each kind in a generated plan (every kind present gets at least one). */
const WEIGHTS: Record<FaultKind, number> = {
  'worker-kill': 25,
  'workers-kill-all': 6,
  'worker-freeze': 8,
  'pg-restart': 5,
  'pg-terminate': 5,
  'pg-failover': 3,
  'store-restore': 3,
  'vendor-outage': 8,
  'vendor-drop': 10,
  'vendor-lose': 5,
  'vendor-slow': 6,
  'vendor-repeat': 6,
  'vendor-gateway-5xx': 5,
  'vendor-expired': 4,
  'vendor-metered': 4,
  'webhook-twice': 3,
  'webhook-late': 3,
  'webhook-never': 3,
  'temporal-restart': 4,
  'webhook-down': 6,
};

/** Every allocation failpoint; every production failpoint but `submission.accepted` (the vendor-drop fault's). */
const FILE_ALLOCATION_POINTS = FAILPOINT_NAMES.filter((n) => n.startsWith('allocation.'));
const FILE_PRODUCTION_POINTS = FAILPOINT_NAMES.filter(
  (n) => /^(submission|progress|completion|review-notice)\./.test(n) || n === 'fs.write',
).filter((n) => n !== 'submission.accepted');
/** The PostgreSQL store has no key and index files, and no durable file writes of its own. */
const NOT_IN_POSTGRES: readonly FailpointName[] = ['allocation.key-written', 'allocation.index-written', 'fs.write'];
const ALLOCATION_POINTS = {
  file: FILE_ALLOCATION_POINTS,
  postgres: FILE_ALLOCATION_POINTS.filter((p) => !NOT_IN_POSTGRES.includes(p)),
};
const PRODUCTION_POINTS = {
  file: FILE_PRODUCTION_POINTS,
  postgres: FILE_PRODUCTION_POINTS.filter((p) => !NOT_IN_POSTGRES.includes(p)),
};

/** When a fault fires: the n-th submission the vendor accepted (1-based), or just before a wave's backfill. */
const triggerSchema = z.union([
  z.strictObject({ accepted: z.number().int().min(1) }),
  z.strictObject({ wave: z.number().int().min(0) }),
]);
export type Trigger = z.infer<typeof triggerSchema>;

const faultSchema = z.strictObject({
  id: z.string(),
  kind: z.enum(FAULT_KINDS),
  trigger: triggerSchema,
  /** A vendor fault: the adapter whose simulator it is injected into. */
  target: z.enum(ADAPTERS).optional(),
  /** worker-kill, vendor-drop by a worker's death: `point=kill@n` for the armed worker. */
  failpoint: z.string().optional(),
  /** vendor-drop: the vendor ignores idempotency keys until the dropped step is retried. */
  keysIgnored: z.boolean().optional(),
  /** vendor-outage: 503s to this many requests; vendor-slow: extra ms per job; restore, failover: see `until`. */
  amount: z.number().int().min(0).optional(),
  /** store-restore: the backup is taken at `trigger`, restored at this accepted count; pg-failover: the cut. */
  until: z.number().int().min(1).optional(),
  /** worker-freeze: only a holder at an allocation's commit point, its week index staged, is frozen. */
  atStagedCommit: z.boolean().optional(),
});
export type PlannedFault = z.infer<typeof faultSchema>;

const decisionSchema = z.strictObject({
  kind: z.enum(['approve', 'rework']),
  /** update: the `approve`/`requestRework` update; signal: the signal; cli+signal: `episodes approve` and a signal. */
  channel: z.enum(['update', 'signal', 'cli+signal']),
  /** Sent only after the next restart fault (or at the settle, if none comes). */
  late: z.boolean(),
});
export type PlannedDecision = z.infer<typeof decisionSchema>;

const slotSchema = z.strictObject({
  /** The weekly run's workflow ID, hence its allocation key. */
  key: z.string(),
  nominal: z.iso.datetime(),
  week: z.string(),
  wave: z.number().int().min(0),
  /** One per approval round: reworks, then the approval. */
  decisions: z.array(decisionSchema).min(1),
});
export type PlannedSlot = z.infer<typeof slotSchema>;

export const planSchema = z.strictObject({
  schema: z.literal('campaign-plan/v1'),
  seed: z.number().int(),
  store: z.enum(STORE_KINDS),
  /** Which adapter each kind's jobs go to (campaign/vendors.ts); plans written before `--vendor`: native. */
  vendor: z.enum(VENDOR_CHOICES).default('native'),
  workers: z.number().int().min(1),
  scheduleId: z.string(),
  workflowIdBase: z.string(),
  slots: z.array(slotSchema),
  waves: z.array(z.strictObject({ from: z.iso.datetime(), to: z.iso.datetime() })),
  /** Triggers of the current week, each after the backfill of a wave; their decisions are the same for all. */
  triggers: z.array(z.strictObject({ afterWave: z.number().int().min(0), decisions: z.array(decisionSchema) })),
  operator: z.array(
    z.strictObject({ kind: z.enum(['rebackfill', 'reset']), slot: z.string(), afterWave: z.number().int() }),
  ),
  faults: z.array(faultSchema),
  /** The sizes it was drawn with, for the replay command a reader can type (plans written before: none). */
  sizes: z
    .strictObject({
      weeks: z.number().int(),
      perWeek: z.number().int(),
      faults: z.number().int(),
      without: z.array(z.enum(FAULT_KINDS)),
    })
    .optional(),
});
export type Plan = z.infer<typeof planSchema>;

/** `npm run campaign` with the seed and sizes that draw this plan again (or its file, for a plan without sizes). */
export function replayCommand(plan: Plan, file: string, unsafe?: string): string {
  const s = plan.sizes;
  const args = s
    ? [
        `--store ${plan.store}`,
        ...(plan.vendor !== 'native' ? [`--vendor ${plan.vendor}`] : []),
        `--weeks ${s.weeks} --per-week ${s.perWeek} --faults ${s.faults}`,
        ...(plan.workers !== 3 ? [`--workers ${plan.workers}`] : []),
        ...(s.without.length > 0 ? [`--without ${s.without.join(',')}`] : []),
        `--seed ${plan.seed}`,
      ]
    : [`--replay ${file}`];
  return `npm run campaign -- ${[...args, ...(unsafe ? [`--unsafe ${unsafe}`] : [])].join(' ')}`;
}

/**
 * The plan with every worker-freeze at a wave's allocations, each wave in turn, on a holder at its commit point (key
 * file committed, week index staged): the frozen worker holds the pipeline lock, which the wave's other allocations
 * (and the retry of its own) take over meanwhile. The no-fence proof aims its freezes there: a freeze planned at a
 * submission count finds an episode's lock, which no other worker wants within the freeze, so nothing is taken over;
 * a holder frozen before its commit point reads again once resumed, so nothing stale can land.
 */
export function freezesAtAllocations(plan: Plan): Plan {
  let wave = 0;
  const aimed = (f: PlannedFault): PlannedFault =>
    f.kind === 'worker-freeze' ? { ...f, trigger: { wave: wave++ % plan.waves.length }, atStagedCommit: true } : f;
  return { ...plan, faults: plan.faults.map(aimed) };
}

export interface PlanOptions {
  seed: number;
  store: StoreKind;
  vendor?: VendorChoice;
  weeks: number;
  perWeek: number;
  faults: number;
  workers: number;
  /** Fault kinds left out of the plan (e.g. to run without the store's forgetting faults). */
  without?: readonly FaultKind[];
}

const WAVE_WEEKS = 4;
/** The two weekly slots of the campaign's schedule (UTC). */
const SLOT_TIMES = [
  { dayOffset: 0, hour: 9 },
  { dayOffset: 3, hour: 15 },
  { dayOffset: 5, hour: 11 },
];

export function generatePlan(o: PlanOptions, now: Date = new Date()): Plan {
  const random = seededRandom(o.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const weeks = lastWeeksOfLongYear(o.weeks, now);
  const slots: PlannedSlot[] = weeks.flatMap((w, i) =>
    SLOT_TIMES.slice(0, o.perWeek).map((t) => {
      const nominal = new Date(mondayOf(w.year, w.week) + t.dayOffset * 86_400_000 + t.hour * 3_600_000);
      return {
        key: `campaign-${nominal.toISOString().replace('.000Z', 'Z')}`,
        nominal: nominal.toISOString(),
        week: formatWeekId(w.year, w.week),
        wave: Math.floor(i / WAVE_WEEKS),
        decisions: plannedDecisions(random, pick),
      };
    }),
  );
  const waveCount = Math.ceil(weeks.length / WAVE_WEEKS);
  const waves = Array.from({ length: waveCount }, (_, w) => {
    const inWave = slots.filter((s) => s.wave === w).map((s) => Date.parse(s.nominal));
    return {
      from: new Date(Math.min(...inWave) - 60_000).toISOString(),
      to: new Date(Math.max(...inWave) + 60_000).toISOString(),
    };
  });
  const triggerCount = Math.max(1, Math.round(o.weeks / 13));
  const triggers = Array.from({ length: triggerCount }, (_, i) => ({
    afterWave: Math.min(waveCount - 1, Math.floor(((i + 1) * waveCount) / (triggerCount + 1))),
    decisions: plannedDecisions(random, pick),
  }));
  const late = (w: number) => Math.min(waveCount - 1, w);
  const operator = [
    { kind: 'rebackfill' as const, slot: slots[0]!.key, afterWave: late(1) },
    { kind: 'reset' as const, slot: slots[Math.min(slots.length - 1, o.perWeek)]!.key, afterWave: late(1) },
  ];
  const accepted = slots.reduce((n, s) => n + 2 + s.decisions.length, 0);
  let wave = Math.floor(random() * waveCount);
  const nextWave = () => (wave = (wave + 1) % waveCount);
  const faults = plannedFaults(o, { random, pick, accepted, waveCount, nextWave });
  return {
    schema: 'campaign-plan/v1',
    seed: o.seed,
    store: o.store,
    vendor: o.vendor ?? 'native',
    workers: o.workers,
    scheduleId: 'campaign',
    workflowIdBase: 'campaign',
    slots,
    waves,
    triggers,
    operator,
    faults,
    sizes: { weeks: o.weeks, perWeek: o.perWeek, faults: o.faults, without: [...(o.without ?? [])] },
  };
}

function plannedDecisions(random: () => number, pick: <T>(items: readonly T[]) => T): PlannedDecision[] {
  const reworks = random() < 0.5 ? 0 : random() < 0.7 ? 1 : 2;
  const decision = (kind: 'approve' | 'rework'): PlannedDecision => ({
    kind,
    channel: random() < 0.2 ? 'cli+signal' : pick(['update', 'update', 'signal'] as const),
    late: random() < 0.1,
  });
  return [...Array.from({ length: reworks }, () => decision('rework')), decision('approve')];
}

interface FaultContext {
  random: () => number;
  pick: <T>(items: readonly T[]) => T;
  /** Submissions the vendor will accept in the whole plan (video, cover, reworks, assembly). */
  accepted: number;
  waveCount: number;
  /** The wave for the next allocation fault: each wave in turn, from a seeded start (one per wave while they last). */
  nextWave: () => number;
}

function plannedFaults(o: PlanOptions, c: FaultContext): PlannedFault[] {
  const kinds = FAULT_KINDS.filter(
    (k) =>
      (o.store === 'postgres' || !POSTGRES_ONLY.includes(k)) &&
      !o.without?.includes(k) &&
      targetsOf(k, o.vendor ?? 'native')?.length !== 0,
  );
  const total = Math.max(o.faults, kinds.length);
  const weight = kinds.reduce((n, k) => n + WEIGHTS[k], 0);
  // Every kind once, the rest by weight (largest remainder), so that each kind hits at least once.
  const counts = new Map(kinds.map((k) => [k, 1]));
  const extra = total - kinds.length;
  const shares = kinds.map((k) => ({ k, share: (extra * WEIGHTS[k]) / weight }));
  for (const s of shares) counts.set(s.k, counts.get(s.k)! + Math.floor(s.share));
  const left = extra - shares.reduce((n, s) => n + Math.floor(s.share), 0);
  shares.sort((a, b) => (b.share % 1) - (a.share % 1));
  for (const s of shares.slice(0, left)) counts.set(s.k, counts.get(s.k)! + 1);
  const faults: PlannedFault[] = [];
  for (const [kind, count] of counts) {
    for (let i = 0; i < count; i++) faults.push(oneFault(kind, i, o, c));
  }
  return faults
    .sort((a, b) => order(a.trigger, c) - order(b.trigger, c))
    .map((f, i) => ({ ...f, id: `f${String(i + 1).padStart(3, '0')}-${f.kind}` }));
}

/** Position of a trigger on the accepted-submission axis (a wave starts at its share of the submissions). */
function order(t: Trigger, c: FaultContext): number {
  return 'accepted' in t ? t.accepted : (t.wave * c.accepted) / c.waveCount - 0.5;
}

function oneFault(kind: FaultKind, i: number, o: PlanOptions, c: FaultContext): PlannedFault {
  const targets = targetsOf(kind, o.vendor ?? 'native');
  const fault = kindFault(kind, i, o, c);
  // Native-only runs keep the plans they had before `--vendor` (no target: the native simulator).
  if (!targets || (o.vendor ?? 'native') === 'native') return fault;
  const target = c.pick(targets);
  // Only the native vendor has keys to ignore.
  return { ...fault, target, ...(fault.keysIgnored && target !== 'native' ? { keysIgnored: false } : {}) };
}

function kindFault(kind: FaultKind, i: number, o: PlanOptions, c: FaultContext): PlannedFault {
  const at = (lo = 0.02, hi = 0.8) => ({
    accepted: Math.max(1, Math.round(c.accepted * (lo + c.random() * (hi - lo)))),
  });
  const base = { id: '', kind };
  switch (kind) {
    case 'worker-kill': {
      // A third at allocations (armed before a wave's backfill; one per wave, since a wave's allocations are over when
      // the armed worker of another fault at that wave gets its turn), the rest in production.
      if (i % 3 === 0 && i / 3 < c.waveCount) {
        const wave = c.nextWave();
        return { ...base, trigger: { wave }, failpoint: `${c.pick(ALLOCATION_POINTS[o.store])}=kill@${1 + (i % 2)}` };
      }
      return { ...base, trigger: at(), failpoint: `${c.pick(PRODUCTION_POINTS[o.store])}=kill@${1 + (i % 3)}` };
    }
    case 'worker-freeze':
      // A third at a wave's allocations (the holder of the pipeline lock), the rest at any lock a worker holds.
      return i % 3 === 1 ? { ...base, trigger: { wave: c.nextWave() } } : { ...base, trigger: at() };
    case 'vendor-drop':
      // In turn: the worker dies before it saved the reply, or the vendor drops the connection; the first two with
      // the vendor ignoring keys meanwhile (so that the retry cannot lean on the vendor's memory).
      return {
        ...base,
        trigger: at(),
        keysIgnored: i % 4 < 2,
        ...(i % 2 === 0 ? { failpoint: 'submission.accepted=kill@1' } : {}),
      };
    case 'vendor-outage':
      return { ...base, trigger: at(), amount: 10 + Math.floor(c.random() * 30) };
    case 'vendor-slow':
      return { ...base, trigger: at(), amount: 5_000 + Math.floor(c.random() * 10_000) };
    case 'vendor-metered':
      // fal: output units billed (usually 5); Replicate: predict_time × amount / 10. Never the usual amount.
      return { ...base, trigger: at(), amount: c.pick([2, 3, 4, 7, 13, 21, 34]) };
    case 'webhook-late':
      return { ...base, trigger: at(), amount: 2_000 + Math.floor(c.random() * 6_000) };
    case 'store-restore':
    case 'pg-failover': {
      const from = at(0.1, 0.8);
      return { ...base, trigger: from, until: from.accepted + 4 + Math.floor(c.random() * 8) };
    }
    default:
      return { ...base, trigger: at() };
  }
}

/** The last `n` ISO weeks of the latest past year that has a week 53 (so the campaign crosses a W53). */
export function lastWeeksOfLongYear(n: number, now: Date): { year: number; week: number }[] {
  let year = now.getUTCFullYear() - 1;
  while (isoWeeksInYear(year) !== 53 || mondayOf(year, 53) + 7 * 86_400_000 > now.getTime()) year -= 1;
  const out: { year: number; week: number }[] = [];
  for (let y = year, w = 53; out.length < n;) {
    out.unshift({ year: y, week: w });
    w -= 1;
    if (w === 0) {
      y -= 1;
      w = isoWeeksInYear(y);
    }
  }
  return out;
}

/** Midnight UTC of the Monday of ISO week `week` of `year` (week 1 holds January 4). */
function mondayOf(year: number, week: number): number {
  const jan4 = Date.UTC(year, 0, 4);
  const weekday = (new Date(jan4).getUTCDay() + 6) % 7;
  return jan4 - weekday * 86_400_000 + (week - 1) * 7 * 86_400_000;
}
