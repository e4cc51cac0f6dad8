/**
 * The desk's audit log: one JSON object per line, to stderr or to a file (opened for appending, 0600, never through a
 * symlink). It records what the desk itself sees: sign-ins (refused ones too), sign-outs, sessions that ended, refused
 * requests (origin, CSRF, OIDC callbacks), each decision sent through the desk, and the detail of every error page's
 * incident. Who, through which channel and sign-in method, when (`at`), from where (`ip`, the client address as
 * trust-proxy allows). Never a token, a session id, a cookie or a client secret.
 *
 * Anyone can send refused requests, so they cannot grow the log without bound: per address and minute the first
 * REFUSALS_IN_FULL are written in full, the rest counted into one `refusals-counted` line (written with the next line
 * after that minute, or at close); and a file is rotated to `<file>.1` once it passes its size limit.
 */
import * as fs from 'node:fs';
import { openPrivateAppend } from './private-file';

const MAX_PATH = 512;

export type AuditEvent =
  | { event: 'sign-in'; outcome: 'ok' | 'refused'; method: 'token' | 'oidc'; reviewer?: string; reason?: string }
  | { event: 'sign-out'; reviewer: string }
  | { event: 'session-ended'; reviewer: string; reason: string }
  | {
      event: 'request-refused';
      reason: 'origin' | 'csrf' | 'oidc-callback';
      method: string;
      path: string;
      detail?: string;
    }
  | {
      event: 'decision';
      channel: 'desk';
      method: 'token' | 'oidc';
      reviewer: string;
      episode: string;
      round: number;
      kind: 'approve' | 'rework';
      outcome: 'accepted' | 'refused';
      reason?: string;
    }
  | { event: 'error'; incident: string; method: string; path: string; message: string; stack?: string };

/** Where a line came from: the client's address and, once signed in, the session's public handle. */
export interface AuditContext {
  ip: string;
  session?: string;
}

export const REFUSALS_IN_FULL = 10;
/** Addresses counted apart within a minute; past that, the others share one count (address `*`). */
const MAX_COUNTED_ADDRESSES = 10_000;
export const DEFAULT_AUDIT_LOG_MAX_BYTES = 100 * 1024 * 1024;

export class AuditLog {
  private minute = -1;
  private readonly refusals = new Map<string, number>();

  constructor(
    private readonly write: (line: string) => void,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  static toStderr(): AuditLog {
    return new AuditLog((line) => process.stderr.write(line));
  }

  /**
   * Appends to `file`, created 0600; refuses a symlink, another user's file, or one group or others may read. Past
   * `maxBytes` the file becomes `<file>.1` (replacing the one before) and a new one is started.
   */
  static toFile(file: string, maxBytes = DEFAULT_AUDIT_LOG_MAX_BYTES): AuditLog {
    let fd = openPrivateAppend(file, 'audit log');
    let size = fs.fstatSync(fd).size;
    return new AuditLog((line) => {
      if (size > 0 && size + Buffer.byteLength(line) > maxBytes) {
        fs.closeSync(fd);
        fs.renameSync(file, `${file}.1`);
        fd = openPrivateAppend(file, 'audit log');
        size = 0;
      }
      size += fs.writeSync(fd, line);
    });
  }

  record(e: AuditEvent, where: AuditContext): void {
    const now = this.clock();
    this.countsOfMinuteBefore(now);
    if (isRefusal(e) && where.session === undefined && this.counted(where.ip) > REFUSALS_IN_FULL) return;
    // A request's path is the client's to choose: a line stays bounded whatever it sent.
    const bounded = 'path' in e ? { ...e, path: e.path.slice(0, MAX_PATH) } : e;
    this.line({ at: now.toISOString(), ...bounded, ...where });
  }

  /** Writes the counts still held (at the desk's close). */
  flush(): void {
    const minute = new Date(this.minute * 60_000).toISOString();
    for (const [ip, n] of this.refusals) {
      if (n > REFUSALS_IN_FULL) {
        this.line({
          at: this.clock().toISOString(),
          event: 'refusals-counted',
          minute,
          count: n - REFUSALS_IN_FULL,
          ip,
        });
      }
    }
    this.refusals.clear();
  }

  private countsOfMinuteBefore(now: Date): void {
    const minute = Math.floor(now.getTime() / 60_000);
    if (minute === this.minute) return;
    this.flush();
    this.minute = minute;
  }

  /** This address's refusals in this minute, this one included. */
  private counted(ip: string): number {
    const key = this.refusals.has(ip) || this.refusals.size < MAX_COUNTED_ADDRESSES ? ip : '*';
    const n = (this.refusals.get(key) ?? 0) + 1;
    this.refusals.set(key, n);
    return n;
  }

  private line(fields: Record<string, unknown>): void {
    this.write(`${JSON.stringify(fields)}\n`);
  }
}

/** What anyone can cause without a session: refused requests and refused sign-ins. */
function isRefusal(e: AuditEvent): boolean {
  return e.event === 'request-refused' || (e.event === 'sign-in' && e.outcome === 'refused');
}
