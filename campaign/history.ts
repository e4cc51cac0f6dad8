/**
 * history.jsonl: one line per operation the driver invoked, with its outcome (ok, fail, or unknown: it may or may not
 * have happened), and one line per step of a fault (injected, hit, healed, missed, or failed: its injection threw). Written as it happens, so a
 * campaign that dies leaves what it did.
 */
import { appendFileSync } from 'node:fs';

export type Outcome = 'ok' | 'fail' | 'unknown';

export interface OpLine {
  type: 'op';
  op: string;
  args: Record<string, unknown>;
  outcome: Outcome;
  error?: string;
  started: string;
  ended: string;
}

export interface FaultLine {
  type: 'fault';
  id: string;
  kind: string;
  step: 'injected' | 'hit' | 'healed' | 'missed' | 'failed';
  detail: Record<string, unknown>;
  /** Episodes not yet completed when the fault was injected: recovered means all of them complete. */
  inFlight?: string[];
  at: string;
}

export class History {
  constructor(readonly file: string) {}

  fault(line: Omit<FaultLine, 'type' | 'at'>): void {
    this.write({ type: 'fault', ...line, at: new Date().toISOString() });
  }

  /** Runs `body` and writes its line; an error is `fail`, unless `unknown(e)` says the outcome cannot be known. */
  async op<T>(
    op: string,
    args: Record<string, unknown>,
    body: () => Promise<T>,
    unknown: (e: unknown) => boolean = () => false,
  ): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
    const started = new Date().toISOString();
    try {
      const value = await body();
      this.write({ type: 'op', op, args, outcome: 'ok', started, ended: new Date().toISOString() });
      return { ok: true, value };
    } catch (e) {
      const outcome: Outcome = unknown(e) ? 'unknown' : 'fail';
      const error = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 500);
      this.write({ type: 'op', op, args, outcome, error, started, ended: new Date().toISOString() });
      return { ok: false, error };
    }
  }

  private write(line: OpLine | FaultLine): void {
    appendFileSync(this.file, JSON.stringify(line) + '\n');
  }
}
