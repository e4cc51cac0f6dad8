/**
 * The audit log stays bounded whatever strangers send: refused requests beyond the first few per address and minute
 * are counted, not written, and a file is rotated at its size limit.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { AuditLog, REFUSALS_IN_FULL } from '../../../src/review/audit-log';
import { ReviewerStore } from '../../../src/review/reviewers';
import { buildReviewDesk } from '../../../src/review/server';
import { FileEpisodeStore } from '../../../src/store/file-store';
import { scratchDir } from '../../../testkit/scratch';

type Line = Record<string, unknown>;
const refused = { event: 'request-refused', reason: 'origin', method: 'POST', path: '/' } as const;

describe('the audit log, bounded', () => {
  it('a flood of refused requests from one address: the first in full, the rest counted per minute', () => {
    const lines: Line[] = [];
    let now = Date.parse('2026-03-02T10:00:00Z');
    const log = new AuditLog(
      (line) => lines.push(JSON.parse(line) as Line),
      () => new Date(now),
    );
    for (let i = 0; i < 1_000; i++) log.record(refused, { ip: '192.0.2.66' });
    log.record(refused, { ip: '192.0.2.1' });
    log.record({ event: 'sign-in', outcome: 'ok', method: 'token', reviewer: 'alice' }, { ip: '192.0.2.66' });
    assert.equal(lines.length, REFUSALS_IN_FULL + 2, 'another address and a sign-in are still written');
    now += 60_000;
    log.record(refused, { ip: '192.0.2.66' });
    const counted = lines.filter((l) => l.event === 'refusals-counted');
    assert.deepEqual(
      counted.map((l) => [l.ip, l.count, l.minute]),
      [['192.0.2.66', 1_000 - REFUSALS_IN_FULL, '2026-03-02T10:00:00.000Z']],
    );
    assert.equal(lines.at(-1)?.event, 'request-refused', 'a new minute: written in full again');
  });

  it('a desk refusing 500 requests from one address writes about a dozen lines', async () => {
    const dir = scratchDir('audit-bounded-');
    const lines: string[] = [];
    const app = await buildReviewDesk({
      store: new FileEpisodeStore(dir),
      reviewers: new ReviewerStore(path.join(dir, 'reviewers.json')),
      getClient: () => Promise.reject(new Error('no Temporal in this test')),
      budgetCents: 20_000,
      timeZone: 'UTC',
      audit: new AuditLog((line) => lines.push(line)),
    });
    for (let i = 0; i < 500; i++) {
      const r = await app.inject({ method: 'POST', url: '/sign-in', headers: { origin: 'https://elsewhere.example' } });
      assert.equal(r.statusCode, 403);
    }
    await app.close();
    // Twice as many should the requests straddle the turn of a minute.
    assert.ok(lines.length <= 2 * (REFUSALS_IN_FULL + 1), `${lines.length} lines`);
    const parsed = lines.map((l) => JSON.parse(l) as Line);
    const inFull = parsed.filter((l) => l.event === 'request-refused').length;
    const counted = parsed.filter((l) => l.event === 'refusals-counted').reduce((n, l) => n + Number(l.count), 0);
    assert.equal(inFull + counted, 500, 'every refusal is in the log, written or counted');
  });

  it('a file past its size limit becomes <file>.1 and a new one starts, both 0600', () => {
    const file = path.join(scratchDir('audit-rotate-'), 'audit.jsonl');
    const log = AuditLog.toFile(file, 4_000);
    for (let i = 0; i < 100; i++) {
      log.record({ event: 'sign-out', reviewer: `reviewer-${i}` }, { ip: '192.0.2.1', session: 'abcd' });
    }
    for (const f of [file, `${file}.1`]) {
      assert.ok(statSync(f).size <= 4_000, `${f}: ${statSync(f).size} bytes`);
      assert.equal(statSync(f).mode & 0o777, 0o600);
    }
    assert.match(readFileSync(file, 'utf8'), /reviewer-99"/);
  });
});
