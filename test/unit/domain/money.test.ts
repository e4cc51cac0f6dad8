import assert from 'node:assert/strict';
import { formatMoney } from '../../../src/domain/money';

describe('formatMoney', () => {
  it('prints integer cents as currency', () => {
    assert.equal(formatMoney(4200), '42.00 USD');
    assert.equal(formatMoney(5300, 'EUR'), '53.00 EUR');
    assert.equal(formatMoney(5), '0.05 USD');
    assert.equal(formatMoney(0), '0.00 USD');
    assert.equal(formatMoney(123456789), '1234567.89 USD');
    assert.equal(formatMoney(-150), '-1.50 USD');
  });
});
