/** Sign-ins under way at the identity provider: bounded, and no address can push out another's. */
import assert from 'node:assert/strict';
import { PendingSignIns, type Pending } from '../../../src/review/oidc';

const MINUTE = 60_000;

function started(address: string, startedAt: number): Pending {
  return { verifier: 'v', state: 's', nonce: 'n', startedAt, address };
}

describe('OIDC sign-ins under way', () => {
  it('a flood from one address pushes out only its own; another address’s sign-in still finishes', () => {
    const pending = new PendingSignIns();
    pending.add('reviewer', started('192.0.2.1', 0));
    for (let i = 0; i < 5_000; i++) pending.add(`flood-${i}`, started('192.0.2.66', 1));
    assert.equal(pending.take('reviewer', 's', 2)?.address, '192.0.2.1');
    assert.equal(pending.take('flood-4999', 's', 2)?.address, '192.0.2.66', 'the newest of the flood is kept');
    assert.equal(pending.take('flood-0', 's', 2), undefined, 'the oldest of the flood went first');
  });

  it('a full table refuses new sign-ins instead of pushing out another address’s', () => {
    const pending = new PendingSignIns();
    assert.equal(pending.add('reviewer', started('192.0.2.1', 0)), true);
    let refused = 0;
    // Many addresses (a botnet, or IPv6 addresses of one network), a few sign-ins each.
    for (let i = 0; i < 2_000; i++) if (!pending.add(`flood-${i}`, started(`2001:db8::${i}`, 1))) refused++;
    assert.equal(refused, 1_001);
    assert.equal(pending.take('reviewer', 's', 2)?.address, '192.0.2.1');
    assert.equal(pending.add('after', started('192.0.2.2', 3)), true, 'a finished sign-in frees its place');
  });

  it('a transaction is taken once, only with its state, and not after 10 minutes', () => {
    const pending = new PendingSignIns();
    pending.add('a', started('192.0.2.1', 0));
    pending.add('b', started('192.0.2.1', 0));
    assert.equal(pending.take('a', 'forged', MINUTE), undefined, 'another state takes nothing');
    assert.ok(pending.take('a', 's', MINUTE), 'and leaves the transaction in place');
    assert.equal(pending.take('a', 's', MINUTE), undefined, 'a second callback finds none');
    assert.equal(pending.take('b', 's', 11 * MINUTE), undefined);
  });
});
