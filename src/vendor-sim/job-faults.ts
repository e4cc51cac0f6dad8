/**
 * The per-job faults of the simulator (faults.ts `loseJobs`, `slowJobs`, `repeatCompletion`): which accepted jobs they
 * picked, and what a read of such a job shows. In memory only, like every fault.
 */
import type { JobStatus } from '../vendor-api/api';
import { consume, type VendorFaults } from './faults';

/** What a read of a job shows once its per-job faults are applied; `note` names the fault that showed. */
export interface FaultedView {
  status: JobStatus;
  note: 'lost' | 'repeat-completion' | null;
}

export class JobFaults {
  private readonly lost = new Set<string>();
  private readonly slow = new Map<string, number>();
  /** Jobs reporting their completion again → when their artifact was first downloaded. */
  private readonly repeats = new Map<string, number>();
  private readonly downloaded = new Set<string>();
  private readonly succeeded = new Set<string>();

  /** At acceptance: the faults of the current set that pick this job. */
  pick(jobId: string, faults: VendorFaults): void {
    if (consume(faults.loseJobs)) this.lost.add(jobId);
    if (faults.slowJobs && consume(faults.slowJobs)) this.slow.set(jobId, faults.slowJobs.ms);
  }

  /** At a job's first artifact download: `repeatCompletion` picks it (its completion is reported again). */
  downloadedNow(jobId: string, faults: VendorFaults, now: number): void {
    if (this.downloaded.has(jobId)) return;
    this.downloaded.add(jobId);
    const only = faults.repeatCompletion?.jobs;
    if ((only === undefined || only.includes(jobId)) && consume(faults.repeatCompletion)) this.repeats.set(jobId, now);
  }

  /** A fault set without `loseJobs` finds the lost jobs again. */
  refresh(faults: VendorFaults): void {
    if (!faults.loseJobs) this.lost.clear();
  }

  isLost(jobId: string): boolean {
    return this.lost.has(jobId);
  }

  extraMs(jobId: string): number {
    return this.slow.get(jobId) ?? 0;
  }

  /** Its artifact stays downloadable once it succeeded, even while a repeated completion shows `running`. */
  hasSucceeded(jobId: string): boolean {
    return this.succeeded.has(jobId);
  }

  /** The status a read shows, given the status by time alone. */
  view(jobId: string, status: JobStatus, durationMs: number, now: number): FaultedView {
    if (status !== 'succeeded') return { status, note: null };
    this.succeeded.add(jobId);
    const first = this.repeats.get(jobId);
    if (first === undefined) return { status, note: null };
    if (now - first < durationMs) return { status: 'running', note: null };
    this.repeats.delete(jobId);
    return { status, note: 'repeat-completion' };
  }
}
