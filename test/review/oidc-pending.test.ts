/** Sign-ins under way at the identity provider: bounded, and one address can only push out its own. */
import assert from 'node:assert/strict';
import { PendingSignIns, type Pending } from '../../src/review/oidc';

const MINUTE = 60_000;

function started(address: string, startedAt: number): Pending {
  return { verifier: 'v', state: 's', nonce: 'n', startedAt, address };
}

describe('OIDC sign-ins under way', () => {
  it('a flood from one address pushes out only its own; another address’s sign-in still finishes', () => {
    const pending = new PendingSignIns();
    pending.add('reviewer', started('192.0.2.1', 0));
    for (let i = 0; i < 5_000; i++) pending.add(`flood-${i}`, started('192.0.2.66', 1));
    assert.equal(pending.take('reviewer', 2)?.address, '192.0.2.1');
    assert.equal(pending.take('flood-4999', 2)?.address, '192.0.2.66', 'the newest of the flood is kept');
    assert.equal(pending.take('flood-0', 2), undefined, 'the oldest of the flood went first');
  });

  it('a transaction is taken once, and not after 10 minutes', () => {
    const pending = new PendingSignIns();
    pending.add('a', started('192.0.2.1', 0));
    pending.add('b', started('192.0.2.1', 0));
    assert.ok(pending.take('a', MINUTE));
    assert.equal(pending.take('a', MINUTE), undefined, 'a second callback finds none');
    assert.equal(pending.take('b', 11 * MINUTE), undefined);
  });
});
