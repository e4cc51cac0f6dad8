/**
 * Money is stored and sent as integer cents with its currency beside it (JSON outputs keep exactly that); people read
 * it as `42.00 USD`. The one place that turns cents into text.
 */
export function formatMoney(amountCents: number, currency = 'USD'): string {
  const sign = amountCents < 0 ? '-' : '';
  const abs = Math.abs(amountCents);
  const units = Math.floor(abs / 100);
  const cents = String(abs % 100).padStart(2, '0');
  return `${sign}${units}.${cents} ${currency}`;
}
