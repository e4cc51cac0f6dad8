/** `episodes vendors`: the assignments and profiles as an operator reads them; a bad assignment is refused clearly. */
import assert from 'node:assert/strict';
import { runCli } from '../../../testkit/processes';

describe('episodes vendors', function () {
  this.timeout(30_000);

  it('lists each kind’s vendor and each adapter’s profile, reading no key', async () => {
    const r = await runCli(['vendors', '--json'], {
      EPISODES_VENDOR_API_KEY_FILE: '/nonexistent/key',
      EPISODES_VENDOR_REWORK: 'native',
    });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { assigned: Record<string, string>; adapters: Record<string, unknown> };
    assert.deepEqual(out.assigned, { video: 'native', cover: 'native', rework: 'native', assembly: 'native' });
    assert.deepEqual(Object.keys(out.adapters), ['native', 'fal', 'replicate']);
    assert.match(JSON.stringify(out.adapters.native), /"idempotency":"key"/);
    assert.match(JSON.stringify(out.adapters.fal), /"idempotency":"none".*"mode":"metered"/);
  });

  it('an assignment to an adapter that is not set up fails with the setting’s name and changes nothing', async () => {
    const r = await runCli(['vendors'], { EPISODES_VENDOR_COVER: 'nosuch:model' });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /EPISODES_VENDOR_COVER: no adapter "nosuch"/);
    const bad = await runCli(['vendors'], { EPISODES_VENDOR_VIDEO: 'native:../../etc' });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /EPISODES_VENDOR_VIDEO/);
  });

  it('vendor-live sends nothing and reads no key without --yes, and refuses a spec that is not an object', async () => {
    const env = { EPISODES_VENDOR_API_KEY_FILE: '/nonexistent/key' };
    const unconfirmed = await runCli(['vendor-live', 'video', '--spec', '{"prompt":"x"}'], env);
    assert.equal(unconfirmed.code, 2);
    assert.match(unconfirmed.stderr, /add --yes/);
    assert.doesNotMatch(unconfirmed.stderr, /key/i, 'the key was not read');
    const list = await runCli(['vendor-live', 'video', '--spec', '[1]', '--yes'], env);
    assert.equal(list.code, 2);
    assert.match(list.stderr, /JSON object/);
  });
});
