/**
 * The desk's audit log: one JSON object per line, to stderr or to a file (opened for appending, 0600, never through a
 * symlink). It records what the desk itself sees: sign-ins (refused ones too), sign-outs, sessions that ended, refused
 * requests (origin, CSRF), each decision sent through the desk, and the detail of every error page's incident. Who,
 * through which channel and sign-in method, when (`at`), from where (`ip`, the client address as trust-proxy allows).
 * Never a token, a session id, a cookie or a client secret.
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

export class AuditLog {
  constructor(
    private readonly write: (line: string) => void,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  static toStderr(): AuditLog {
    return new AuditLog((line) => process.stderr.write(line));
  }

  /** Appends to `file`, created 0600; refuses a symlink, another user's file, or one group or others may read. */
  static toFile(file: string): AuditLog {
    const fd = openPrivateAppend(file, 'audit log');
    return new AuditLog((line) => fs.writeSync(fd, line));
  }

  record(e: AuditEvent, where: AuditContext): void {
    // A request's path is the client's to choose: a line stays bounded whatever it sent.
    const bounded = 'path' in e ? { ...e, path: e.path.slice(0, MAX_PATH) } : e;
    this.write(`${JSON.stringify({ at: this.clock().toISOString(), ...bounded, ...where })}\n`);
  }
}
