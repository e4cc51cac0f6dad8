/**
 * Compute time billed at a price per second, to the cent: the ledger line of a metered job (Replicate:
 * `metrics.predict_time` × the hardware's price). One rule, so the adapter and the simulator's journal round alike:
 * per job, half up, in integers (milliseconds × nano-dollars per second) so no float drift reaches a cent.
 */
export function meteredCents(seconds: number, usdPerSecond: number): number {
  const ms = Math.round(seconds * 1000);
  const nanoUsdPerSecond = Math.round(usdPerSecond * 1e9);
  // ms × n$/s = 1e-12 USD = 1e-10 cents.
  return Math.round((ms * nanoUsdPerSecond) / 1e10);
}
