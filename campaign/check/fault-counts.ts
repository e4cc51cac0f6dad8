/**
 * The faults' side of the check, from the campaign's history.jsonl alone (pure but for reading that file): per kind,
 * faults injected, those that hit something in flight and those that recovered; the faults whose injection failed;
 * and the kinds that were injected often enough to hit and never did. A campaign whose faults did not happen proves
 * nothing, so each of these fails it like a broken invariant.
 */
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';

export interface KindCount {
  kind: string;
  injected: number;
  hit: number;
  recovered: number;
}

/** A kind injected this many times that never hit in flight fails the campaign, whatever its size. */
export const NEVER_HIT_LIMIT = 3;

const faultLineSchema = z.object({
  type: z.literal('fault'),
  id: z.string(),
  kind: z.string(),
  step: z.enum(['injected', 'hit', 'healed', 'missed', 'failed']),
  detail: z.record(z.string(), z.unknown()).optional(),
  inFlight: z.array(z.string()).optional(),
});
export type FaultLine = z.infer<typeof faultLineSchema>;

export function readFaultLines(historyFile: string): FaultLine[] {
  if (!existsSync(historyFile)) return [];
  return readFileSync(historyFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"type":"fault"'))
    .map((l) => faultLineSchema.parse(JSON.parse(l)));
}

/**
 * Per kind: faults injected, those that hit something in flight, and those that recovered: hit, healed, and every
 * episode in flight when it was injected has completed (a restore's renamed episode must still exist and complete
 * under its id).
 */
export function countFaults(lines: readonly FaultLine[], completed: ReadonlySet<string>): KindCount[] {
  const byId = new Map<string, { kind: string; steps: Set<string>; inFlight: string[] }>();
  for (const l of lines) {
    const f = byId.get(l.id) ?? { kind: l.kind, steps: new Set<string>(), inFlight: [] };
    f.steps.add(l.step);
    if (l.inFlight) f.inFlight = l.inFlight;
    byId.set(l.id, f);
  }
  const kinds = new Map<string, KindCount>();
  for (const f of byId.values()) {
    const k = kinds.get(f.kind) ?? { kind: f.kind, injected: 0, hit: 0, recovered: 0 };
    k.injected += f.steps.has('injected') ? 1 : 0;
    const hit = f.steps.has('hit');
    k.hit += hit ? 1 : 0;
    k.recovered += hit && f.steps.has('healed') && f.inFlight.every((id) => completed.has(id)) ? 1 : 0;
    kinds.set(f.kind, k);
  }
  return [...kinds.values()];
}

/** Each planned fault whose injection (or healing) threw: its id, kind and error. */
export function failedFaults(lines: readonly FaultLine[]): string[] {
  return lines
    .filter((l) => l.step === 'failed')
    .map((l) => `${l.id} (${l.kind}): ${typeof l.detail?.error === 'string' ? l.detail.error : 'no error given'}`);
}

/**
 * Kinds that never hit in flight: at any size, those injected NEVER_HIT_LIMIT times or more; with `everyKind` (the
 * default year, whose plan gives every kind its chances), every kind injected at all.
 */
export function kindsNeverHit(kinds: readonly KindCount[], everyKind: boolean): string[] {
  const limit = everyKind ? 1 : NEVER_HIT_LIMIT;
  return kinds.filter((k) => k.hit === 0 && k.injected >= limit).map((k) => `${k.kind}: injected ${k.injected}, hit 0`);
}

/** The two fault invariants of the check, named as the report shows them, with their details. */
export function faultInvariants(
  lines: readonly FaultLine[],
  kinds: readonly KindCount[],
  everyKind: boolean,
): { name: string; details: string[] }[] {
  return [
    { name: 'fault kinds that never hit in flight', details: kindsNeverHit(kinds, everyKind) },
    { name: 'planned faults whose injection failed (the fault, its error)', details: failedFaults(lines) },
  ];
}
