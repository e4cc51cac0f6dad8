import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { doubleCharges, ledgerBilling } from '../../../campaign/check/invariants';
import { readBilling } from '../../../campaign/check/reads';

describe("the checker's billing: the union of the simulators' journals", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'campaign-reads-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, body: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, JSON.stringify(body));
    return file;
  };

  it('names each charge as the ledger names its job: native id, fal `<ref>@<request_id>`, prediction id', () => {
    const native = write('vendor-journal.json', {
      charges: [
        {
          job_id: 'job_1',
          episode_id: '2020-W01-0',
          kind: 'cover',
          client_ref: '2020-W01-0:cover:r0',
          amount_cents: 300,
          currency: 'USD',
        },
      ],
    });
    const fal = write('fal-billing.json', {
      charges: [{ request_id: 'r-1', endpoint_id: 'm', ref: '2020-W01-0:video:r0', amount_cents: 35, currency: 'USD' }],
    });
    const replicate = write('replicate-billing.json', {
      entries: [{ id: 'p1', correlation: '2020-W01-0:rework:r1', amount_cents: 17, currency: 'USD' }],
    });
    const billing = readBilling([
      { flavor: 'native', file: native },
      { flavor: 'fal', file: fal },
      { flavor: 'replicate', file: replicate },
    ]);
    assert.deepEqual(
      billing.map((c) => [c.job_id, c.episode_id, c.kind, c.client_ref, c.amount_cents]),
      [
        ['job_1', '2020-W01-0', 'cover', '2020-W01-0:cover:r0', 300],
        ['2020-W01-0:video:r0@r-1', '2020-W01-0', 'video', '2020-W01-0:video:r0', 35],
        ['p1', '2020-W01-0', 'rework', '2020-W01-0:rework:r1', 17],
      ],
    );
    const ledger = billing.map((c) => ({
      episode_id: c.episode_id,
      step: c.kind,
      remote_job_id: c.job_id,
      amount_cents: c.amount_cents,
    }));
    assert.deepEqual(ledgerBilling(ledger, billing), { lines: [], cents: 0 });
  });

  it('two fal requests for one step are a double charge, whatever their request ids', () => {
    const fal = write('fal-billing.json', {
      charges: ['r-1', 'r-2'].map((id) => ({
        request_id: id,
        ref: '2020-W01-0:video:r0',
        amount_cents: 35,
        currency: 'USD',
      })),
    });
    assert.equal(doubleCharges(readBilling([{ flavor: 'fal', file: fal }])).length, 1);
  });
});
