/**
 * Property tests of the pure parsers and the allocation rule against hostile input: every string either parses into
 * something that is exactly what the format promises (and cannot leave the data dir as a path), or is refused with a
 * PipelineError of the documented type. No other exception type, ever.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import fc from 'fast-check';
import { decideAllocation, type StoredEpisodeRef } from '../../../src/domain/allocation';
import { MAX_ALLOCATION_KEY_LENGTH, parseAllocationKey } from '../../../src/domain/allocation-key';
import { formatEpisodeId, MAX_SEQUENCE, parseEpisodeId, type EpisodeId } from '../../../src/domain/episode-id';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';
import {
  formatWeekId,
  isoWeekOfDate,
  isoWeekOfInstant,
  parseInstant,
  parseTimeZone,
  parseWeekId,
} from '../../../src/domain/week-id';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { hostileString } from '../../../testkit/arbitraries';

const RUNS = { numRuns: 2000 };
const ROOT = path.resolve('/srv/episodes-data');
const store = new FileEpisodeStore(ROOT);

/** `p` is `dir/<one plain name>`: no separator, no dot segment, no NUL could make it anything else. */
function assertDirectChild(dir: string, p: string): void {
  assert.equal(path.dirname(p), dir, p);
  const name = path.basename(p);
  assert.ok(name !== '..' && name !== '.' && !name.includes('\0') && !name.includes('/'), p);
}

/** Independent of the code under test: a day from its proleptic Gregorian fields (Date.UTC maps years 0..99 to 19xx). */
function utcDay(year: number, month: number, day: number): Date {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d;
}

/** Oracle: week `week` of ISO year `year` exists iff its Thursday falls in `year` (week 1 holds January 4th). */
function weekExists(year: number, week: number): boolean {
  if (week < 1) return false;
  const jan4 = utcDay(year, 1, 4);
  const mondayOfWeek1 = jan4.getTime() - ((jan4.getUTCDay() + 6) % 7) * 86_400_000;
  const thursday = new Date(mondayOfWeek1 + (3 + (week - 1) * 7) * 86_400_000);
  return thursday.getUTCFullYear() === year;
}

/** Oracle: the ISO week of a date is the week of its Thursday, numbered from that year's week 1. */
function isoWeekOracle(date: Date): string {
  const thursday = new Date(date.getTime() + (3 - ((date.getUTCDay() + 6) % 7)) * 86_400_000);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - utcDay(year, 1, 1).getTime()) / 86_400_000 / 7) + 1;
  return `${String(year).padStart(4, '0')}-W${String(week).padStart(2, '0')}`;
}

/** `parse()`, or `undefined` once the refusal is checked to be a PipelineError of one of `types` (nothing else). */
function parsedOrRefused<T>(parse: () => T, ...types: ErrorType[]): T | undefined {
  try {
    return parse();
  } catch (e) {
    assert.ok(isPipelineError(e) && types.includes(e.type), String(e));
    return undefined;
  }
}

describe('hostile input: domain parsers (fast-check)', () => {
  it('week ids: a hostile string parses to itself (YYYY-Www of a week that exists) or is InvalidInput', () => {
    fc.assert(
      fc.property(hostileString, (raw) => {
        const week = parsedOrRefused(() => parseWeekId(raw), ErrorType.InvalidInput);
        if (week === undefined) return;
        assert.equal(week, raw);
        assert.match(week, /^\d{4}-W\d{2}$/);
        assert.ok(weekExists(Number(week.slice(0, 4)), Number(week.slice(6))), week);
        assertDirectChild(path.join(ROOT, 'index', 'weeks'), store.weekIndexPath(week));
      }),
      RUNS,
    );
  });

  it('week ids: every year 0001..9999 and week 00..54 is accepted exactly when the week exists', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 0, max: 54 }), (year, week) => {
        const raw = formatWeekId(year, week);
        const accepted = parsedOrRefused(() => parseWeekId(raw), ErrorType.InvalidInput) !== undefined;
        assert.equal(accepted, weekExists(year, week), raw);
      }),
      {
        ...RUNS,
        examples: [
          [3, 53],
          [4, 53],
          [99, 53],
          [2026, 53],
          [2025, 53],
        ],
      },
    );
  });

  it('the ISO week of any date in 0001..9999 is the week of its Thursday, and parses', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 31 }),
        (year, month, day) => {
          const date = utcDay(year, month, day);
          fc.pre(date.getUTCMonth() === month - 1); // skip 31 April and friends
          const week = isoWeekOfDate(year, month, day);
          assert.equal(week, isoWeekOracle(date));
          assert.equal(parseWeekId(week), week);
        },
      ),
      {
        ...RUNS,
        examples: [
          [50, 6, 15],
          [1, 1, 1],
          [99, 12, 31],
          [9999, 12, 31],
          [2026, 8, 3],
        ],
      },
    );
  });

  it('instants and timezones: a hostile string parses, or is InvalidInput; the week of a parsed instant parses', () => {
    const zones = ['UTC', 'Asia/Shanghai', 'Pacific/Kiritimati', 'Pacific/Pago_Pago', 'America/Los_Angeles'];
    const instantish = fc.oneof(
      hostileString,
      fc
        .tuple(
          fc.integer({ min: 0, max: 9999 }),
          fc.integer({ min: 0, max: 13 }),
          fc.integer({ min: 0, max: 32 }),
          fc.integer({ min: 0, max: 25 }),
          fc.constantFrom('Z', '+14:00', '-12:00', '+99:99', '-00:00', '+05:30'),
        )
        .map(([y, mo, d, h, off]) => {
          const two = (n: number) => String(n).padStart(2, '0');
          return `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:00:00${off}`;
        }),
    );
    fc.assert(
      fc.property(instantish, fc.oneof(fc.constantFrom(...zones), hostileString), (raw, zone) => {
        const instant = parsedOrRefused(() => parseInstant(raw), ErrorType.InvalidInput);
        if (instant === undefined) return;
        assert.ok(!Number.isNaN(instant.getTime()));
        // An unknown zone, or a wall date before year 1, is refused.
        const week = parsedOrRefused(() => isoWeekOfInstant(instant, zone), ErrorType.InvalidInput);
        if (week === undefined) return;
        assert.equal(parseWeekId(week), week, `${raw} in ${zone}`);
        assert.ok(parseTimeZone(zone).length > 0);
        if (zone === 'UTC') {
          const day = utcDay(instant.getUTCFullYear(), instant.getUTCMonth() + 1, instant.getUTCDate());
          assert.equal(week, isoWeekOracle(day), raw);
        }
      }),
      {
        ...RUNS,
        examples: [
          ['9999-12-31T23:00:00Z', 'Pacific/Kiritimati'],
          ['0001-01-01T00:00:00Z', 'America/Los_Angeles'],
          ['0050-06-15T09:00:00Z', 'UTC'],
        ],
      },
    );
  });

  it('episode ids: a hostile string parses to itself (one plain directory name under episodes/) or is InvalidInput', () => {
    fc.assert(
      fc.property(hostileString, (raw) => {
        const parsed = parsedOrRefused(() => parseEpisodeId(raw), ErrorType.InvalidInput);
        if (parsed === undefined) return;
        const id = parsed.episodeId;
        assert.equal(id, raw);
        assert.equal(formatEpisodeId(parsed.weekId, parsed.sequence), raw);
        assert.equal(parseWeekId(parsed.weekId), parsed.weekId);
        assertDirectChild(path.join(ROOT, 'episodes'), store.episodeDir(id));
        assertDirectChild(path.join(ROOT, 'history'), store.historyPath(id));
      }),
      RUNS,
    );
  });

  it('allocation keys: a hostile string is kept verbatim (and stored under a hash) or is InvalidAllocationRequest', () => {
    fc.assert(
      fc.property(hostileString, (raw) => {
        const key = parsedOrRefused(() => parseAllocationKey(raw), ErrorType.InvalidAllocationRequest);
        if (key === undefined) return;
        assert.equal(key, raw);
        assert.ok(raw.trim().length > 0 && raw.length <= MAX_ALLOCATION_KEY_LENGTH && raw.isWellFormed());
        // eslint-disable-next-line no-control-regex
        assert.doesNotMatch(raw, /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
        const file = store.keyIndexPath(raw);
        assertDirectChild(path.join(ROOT, 'index', 'keys'), file);
        assert.match(path.basename(file), /^[0-9a-f]{64}\.json$/);
      }),
      RUNS,
    );
  });

  it('decideAllocation on arbitrary (even inconsistent) stored facts: an answer that obeys the rule, or a typed refusal', () => {
    const W32 = parseWeekId('2026-W32');
    const W33 = parseWeekId('2026-W33');
    const keys = ['a', 'b', 'c', null];
    const ref = fc
      .record({
        week: fc.constantFrom(W32, W33),
        sequence: fc.oneof(
          fc.integer({ min: 0, max: 6 }),
          fc.constantFrom(MAX_SEQUENCE - 1, MAX_SEQUENCE, MAX_SEQUENCE + 1, -1, 1.5),
        ),
        key: fc.constantFrom(...keys),
        /** A stored id that does not match its own fields: what a hand-edited index looks like. */
        lie: fc.boolean(),
      })
      .map(({ week, sequence, key, lie }): StoredEpisodeRef => ({
        episodeId: (lie ? `${week}-${sequence + 1}` : `${week}-${sequence}`) as EpisodeId,
        weekId: week,
        sequence,
        allocationKey: key,
      }));
    fc.assert(
      fc.property(
        fc.constantFrom('a', 'b', 'c', 'd'),
        fc.constantFrom(W32, W33),
        fc.array(ref, { maxLength: 6 }),
        fc.array(ref, { maxLength: 3 }),
        (rawKey, weekId, weekEpisodes, keyMatches) => {
          const key = parseAllocationKey(rawKey);
          const decision = parsedOrRefused(
            () => decideAllocation({ key, weekId, keyMatches, weekEpisodes }),
            ErrorType.StoreCorrupt,
            ErrorType.AmbiguousAllocationKey,
            ErrorType.AllocationKeyCrossesWeek,
            ErrorType.InvalidAllocationRequest,
          );
          if (decision === undefined) return;
          if (decision.kind === 'existing') {
            assert.equal(decision.episode.allocationKey, key);
            assert.equal(decision.episode.weekId, weekId);
          } else {
            const max = Math.max(-1, ...weekEpisodes.map((e) => e.sequence));
            assert.equal(decision.sequence, max + 1);
            assert.equal(decision.episodeId, `${weekId}-${max + 1}`);
            assert.ok(![...weekEpisodes, ...keyMatches].some((e) => e.allocationKey === key));
            assert.equal(parseEpisodeId(decision.episodeId).episodeId, decision.episodeId);
          }
        },
      ),
      RUNS,
    );
  });
});
