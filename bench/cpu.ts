/** How busy the machine's CPUs were over an interval, from /proc/stat (Linux; undefined elsewhere). */
import { readdirSync, readFileSync } from 'node:fs';

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

/** CPU time (ms, user + system) a process has used so far, from /proc/<pid>/stat; undefined if unknown. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, hence the last ')'): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Linux's USER_HZ: /proc reports CPU times in these ticks on every platform it runs on. */
const CLOCK_TICKS = 100;

/** The processes whose command name is `comm` (the dev server's is `temporal`). */
export function pidsNamed(comm: string): number[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm;
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
}
