/** How busy the machine's CPUs were over an interval, from /proc/stat (Linux; undefined elsewhere). */
import { readFileSync } from 'node:fs';

interface CpuSample {
  busy: number;
  total: number;
}

export function cpuSample(): CpuSample | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are the time nobody computed.
    const total = fields.slice(0, 8).reduce((s, v) => s + v, 0);
    return { busy: total - fields[3]! - fields[4]!, total };
  } catch {
    return undefined;
  }
}

/** Share of all CPUs' time spent computing between two samples (0 to 1). */
export function cpuBusyShare(from: CpuSample | undefined, to: CpuSample | undefined): number | undefined {
  if (!from || !to || to.total <= from.total) return undefined;
  return (to.busy - from.busy) / (to.total - from.total);
}

export function cpuNote(share: number | undefined): string {
  return share === undefined
    ? 'CPU busy: unknown (no /proc/stat)'
    : `CPUs busy ${(share * 100).toFixed(0)}% of the time`;
}
