import { PipelineError, ErrorType } from './errors';

/** An ISO 8601 week, `YYYY-Www`, that is known to exist (W53 only in long years). */
export type WeekId = string & { readonly __brand: 'WeekId' };

const WEEK_ID_PATTERN = /^(\d{4})-W(\d{2})$/;
const MS_PER_DAY = 86_400_000;

/** Midnight UTC of a proleptic Gregorian date. Not `Date.UTC`, which reads years 0..99 as 1900..1999. */
function utcMidnight(year: number, month: number, day: number): number {
  return new Date(0).setUTCFullYear(year, month - 1, day);
}

/** ISO weekday 1 (Monday) .. 7 (Sunday) of a proleptic Gregorian date. */
function isoWeekday(year: number, month: number, day: number): number {
  const dow = new Date(utcMidnight(year, month, day)).getUTCDay();
  return dow === 0 ? 7 : dow;
}

/** 52 or 53: a year is long when it starts on a Thursday, or is a leap year starting on a Wednesday. */
export function isoWeeksInYear(year: number): 52 | 53 {
  const jan1 = isoWeekday(year, 1, 1);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return jan1 === 4 || (leap && jan1 === 3) ? 53 : 52;
}

export function formatWeekId(isoYear: number, week: number): WeekId {
  return `${String(isoYear).padStart(4, '0')}-W${String(week).padStart(2, '0')}` as WeekId;
}

export function parseWeekId(raw: unknown): WeekId {
  if (typeof raw !== 'string') {
    throw new PipelineError(ErrorType.InvalidInput, `week id must be a string like 2026-W32, got ${typeof raw}`);
  }
  const match = WEEK_ID_PATTERN.exec(raw);
  if (!match) {
    throw new PipelineError(ErrorType.InvalidInput, `invalid week id ${JSON.stringify(raw)}: expected YYYY-Www`);
  }
  const year = Number(match[1]);
  const week = Number(match[2]);
  if (year < 1 || week < 1 || week > isoWeeksInYear(year)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `invalid week id ${JSON.stringify(raw)}: ISO year ${year} has weeks W01..W${isoWeeksInYear(year)}`,
    );
  }
  return raw as WeekId;
}

/** ISO week of a calendar date (proleptic Gregorian). */
export function isoWeekOfDate(year: number, month: number, day: number): WeekId {
  // The ISO week belongs to the year of its Thursday.
  const utc = utcMidnight(year, month, day);
  const thursday = new Date(utc + (4 - isoWeekday(year, month, day)) * MS_PER_DAY);
  const isoYear = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - utcMidnight(isoYear, 1, 1)) / MS_PER_DAY / 7) + 1;
  return formatWeekId(isoYear, week);
}

/** Checks an IANA timezone name; `Intl` throws a RangeError for unknown ones. */
export function parseTimeZone(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 64) {
    throw new PipelineError(ErrorType.InvalidInput, `invalid timezone ${JSON.stringify(raw)}`);
  }
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: raw }).resolvedOptions().timeZone;
  } catch {
    throw new PipelineError(ErrorType.InvalidInput, `unknown IANA timezone ${JSON.stringify(raw)}`);
  }
}

/** ISO week that contains `instant` on the wall calendar of `timeZone`. Pure and deterministic (workflow-safe). */
export function isoWeekOfInstant(instant: Date, timeZone: string): WeekId {
  if (Number.isNaN(instant.getTime())) {
    throw new PipelineError(ErrorType.InvalidInput, 'invalid instant');
  }
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: parseTimeZone(timeZone),
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    era: 'short',
  }).formatToParts(instant);
  const part = (type: string): number => Number(parts.find((p) => p.type === type)?.value);
  if (parts.find((p) => p.type === 'era')?.value !== 'AD') {
    throw new PipelineError(ErrorType.InvalidInput, `instant ${instant.toISOString()} is before year 1`);
  }
  return isoWeekOfDate(part('year'), part('month'), part('day'));
}

/** The ISO weeks of the last `count` weeks up to `now`'s in `timeZone`, oldest first. */
export function lastWeeks(count: number, now: Date, timeZone: string): WeekId[] {
  const weeks: WeekId[] = [];
  for (let i = count - 1; i >= 0; i--)
    weeks.push(isoWeekOfInstant(new Date(now.getTime() - i * 7 * 86_400_000), timeZone));
  return weeks;
}

/** Parses an ISO 8601 instant with an explicit offset (`Z` or `+hh:mm`); a bare local time is ambiguous. */
export function parseInstant(raw: unknown): Date {
  if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `invalid instant ${JSON.stringify(raw)}: expected ISO 8601 with offset, e.g. 2026-08-03T09:00:00Z`,
    );
  }
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) {
    throw new PipelineError(ErrorType.InvalidInput, `invalid instant ${JSON.stringify(raw)}`);
  }
  return date;
}
