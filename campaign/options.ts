/**
 * The options of `npm run campaign` and its `--help`. Pure: parsing reads only the arguments it is given, so that
 * a wrong option is one line and the usage, never a stack trace.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CAMPAIGN_UNSAFE, CAMPAIGN_UNSAFE_STORE } from './docs';
import { FAULT_KINDS, STORE_KINDS } from './plan';
import { VENDOR_CHOICES } from './vendors';

export const USAGE = `Usage: npm run campaign -- [options]

A seeded, simulated year of weekly runs under overlapping faults, then an independent checker.
Exit 0 when every invariant holds, 1 on any violation (a fault whose injection failed included), 2 on bad options.

Options:
  --weeks N         weeks of weekly runs (default 52)
  --per-week N      runs per week, 1 to 3 (default 2)
  --faults N        planned faults (default 100; at least one of each kind)
  --seed S          the plan's seed (default: random; printed, and kept in plan.json)
  --store KIND      ${STORE_KINDS.join(' | ')} (default file)
  --vendor V        ${VENDOR_CHOICES.join(' | ')} (default native): the adapter of every paid step, or mixed
                    (video and assembly on fal, cover native, rework on replicate); the vendor faults each
                    adapter cannot show are not planned (docs/reliability.md, "The campaign per vendor")
  --workers N       base worker processes (default 3)
  --out DIR         keep the plan, history, report, vendor journal and store there (default: a temp dir, removed
                    when the campaign passes)
  --replay FILE     run that plan.json again (its seed, store and faults)
  --docs            write the table into docs/reliability.md between its markers (<!-- campaign:<store> -->)
  --without K,...   leave these fault kinds out of the plan:
                    ${FAULT_KINDS.join(', ')}
  --unsafe V        test-only workers (${CAMPAIGN_UNSAFE.join(', ')}), to show that the checker finds what each
                    protection prevents; no-fence on the file store only
  -h, --help        print this and exit
`;

const optionsSchema = z.object({
  weeks: z.coerce.number().int().min(1).max(520),
  'per-week': z.coerce.number().int().min(1).max(3),
  faults: z.coerce.number().int().min(0).max(2_000),
  seed: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 31),
  store: z.enum(STORE_KINDS),
  vendor: z.enum(VENDOR_CHOICES),
  workers: z.coerce.number().int().min(1).max(16),
  out: z.string().optional(),
  replay: z.string().optional(),
  docs: z.boolean(),
  unsafe: z.enum(CAMPAIGN_UNSAFE).optional(),
  without: z
    .string()
    .default('')
    .transform((v) => v.split(',').filter(Boolean))
    .pipe(z.array(z.enum(FAULT_KINDS))),
});
export type CampaignOptions = z.infer<typeof optionsSchema>;

/** What the command line asks for: a campaign, the usage, or nothing valid (`error` says why). */
export type Parsed = { kind: 'run'; options: CampaignOptions } | { kind: 'help' } | { kind: 'error'; error: string };

export function parseOptions(argv: readonly string[], randomSeed: () => number = defaultSeed): Parsed {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        weeks: { type: 'string', default: '52' },
        'per-week': { type: 'string', default: '2' },
        faults: { type: 'string', default: '100' },
        seed: { type: 'string' },
        store: { type: 'string', default: 'file' },
        vendor: { type: 'string', default: 'native' },
        workers: { type: 'string', default: '3' },
        out: { type: 'string' },
        replay: { type: 'string' },
        docs: { type: 'boolean', default: false },
        unsafe: { type: 'string' },
        without: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (e) {
    return { kind: 'error', error: e instanceof Error ? e.message : String(e) };
  }
  if (values.help === true) return { kind: 'help' };
  const parsed = optionsSchema.safeParse({ ...values, seed: values.seed ?? String(randomSeed()) });
  if (!parsed.success) {
    const error = parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ');
    return { kind: 'error', error };
  }
  // With --replay the plan names the store: run.ts checks that one.
  const refused = parsed.data.replay ? undefined : unsafeStoreError(parsed.data.unsafe, parsed.data.store);
  if (refused) return { kind: 'error', error: refused };
  return { kind: 'run', options: parsed.data };
}

/** Why `--unsafe unsafe` cannot run on `store` (a variant of the other store's), or undefined when it can. */
export function unsafeStoreError(unsafe: CampaignOptions['unsafe'], store: string): string | undefined {
  const only = unsafe && CAMPAIGN_UNSAFE_STORE[unsafe];
  if (!only || only === store) return undefined;
  return `--unsafe ${unsafe} is a variant of the ${only} store only; not of the ${store} store`;
}

function defaultSeed(): number {
  return Math.floor(Math.random() * 1_000_000);
}
