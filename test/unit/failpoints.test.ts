import assert from 'node:assert/strict';
import { FAILPOINT_NAMES, parseFailpoints } from '../../src/failpoints';

describe('failpoint names', () => {
  it('parses every known point and refuses a misspelt one instead of never firing', () => {
    const spec = FAILPOINT_NAMES.map((n, i) => `${n}=delay:${i}`).join(',');
    assert.equal(parseFailpoints(spec).size, FAILPOINT_NAMES.length);
    assert.throws(
      () => parseFailpoints('allocation.after-commit=kill'),
      /no failpoint is named "allocation.after-commit"/,
    );
    assert.throws(() => parseFailpoints('submission.accepted=explode'), /cannot parse/);
  });
});
