import assert from 'node:assert/strict';
import {
  isoWeekOfDate,
  isoWeekOfInstant,
  isoWeeksInYear,
  parseInstant,
  parseWeekId,
} from '../../../src/domain/week-id';
import { isPipelineError, ErrorType } from '../../../src/domain/errors';

const invalid = (e: unknown) => isPipelineError(e, ErrorType.InvalidInput);

describe('ISO weeks', () => {
  it('maps the year-boundary edge cases', () => {
    assert.equal(isoWeekOfInstant(new Date('2024-12-30T12:00:00Z'), 'UTC'), '2025-W01');
    assert.equal(isoWeekOfInstant(new Date('2027-01-01T12:00:00Z'), 'UTC'), '2026-W53');
    assert.equal(isoWeekOfDate(2021, 1, 3), '2020-W53');
    assert.equal(isoWeekOfDate(2026, 8, 3), '2026-W32');
    assert.equal(isoWeekOfDate(2026, 8, 9), '2026-W32');
    assert.equal(isoWeekOfDate(2026, 8, 10), '2026-W33');
  });

  it('uses the wall calendar of the timezone: Sunday 23:30 UTC is Monday in Shanghai', () => {
    const sunday = new Date('2026-08-09T23:30:00Z');
    assert.equal(isoWeekOfInstant(sunday, 'UTC'), '2026-W32');
    assert.equal(isoWeekOfInstant(sunday, 'Asia/Shanghai'), '2026-W33');
    assert.equal(isoWeekOfInstant(new Date('2026-08-10T03:00:00Z'), 'America/Los_Angeles'), '2026-W32');
  });

  it('knows which years have 53 weeks', () => {
    const long = [2004, 2009, 2015, 2020, 2026, 2032, 2037];
    for (let y = 2000; y <= 2040; y++) assert.equal(isoWeeksInYear(y), long.includes(y) ? 53 : 52, String(y));
  });

  it('parses valid week ids and rejects malformed ones and W53 in 52-week years', () => {
    assert.equal(parseWeekId('2026-W53'), '2026-W53');
    assert.equal(parseWeekId('2025-W01'), '2025-W01');
    for (const bad of [
      '2025-W53',
      '2026-W00',
      '2026-W54',
      '2026-w32',
      '26-W32',
      '2026-W032',
      ' 2026-W32',
      '2026-W3',
      '',
      '0000-W01',
    ]) {
      assert.throws(() => parseWeekId(bad), invalid, bad);
    }
    assert.throws(() => parseWeekId(202632), invalid);
  });

  it('rejects unknown timezones and instants without an offset', () => {
    assert.throws(() => isoWeekOfInstant(new Date(), 'Mars/Olympus'), invalid);
    assert.throws(() => parseInstant('2026-08-03T09:00:00'), invalid);
    assert.equal(parseInstant('2026-08-03T09:00:00+08:00').toISOString(), '2026-08-03T01:00:00.000Z');
  });
});
