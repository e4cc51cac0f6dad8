/**
 * Reviewers of the review desk and their sign-in tokens. A token is 32 random bytes, shown once by `add-reviewer` or
 * `rotate-reviewer`; only its sha256 is stored (a random 256-bit token needs no slow hash: there is nothing to guess
 * from the digest). The file is `<data dir>/review/reviewers.json`, or EPISODES_REVIEWERS_FILE; it is a local file
 * for both stores (with PostgreSQL too), because it belongs to the desk's host, not to the episodes. It is read
 * without following a symlink and only when this user owns it at mode 0600 (private-file.ts); every change is a
 * read-modify-write under its lock, written atomically and durably.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as path from 'node:path';
import { z } from 'zod';
import { approverProblem } from '../domain/decision';
import { OIDC_NAME_PREFIX } from './oidc';
import { PipelineError, ErrorType } from '../domain/errors';
import { ensureDirDurable, parseJsonText, writeJsonDurable } from '../files/durable-fs';
import { readSetting } from '../settings/read';
import { DirectoryLock } from '../store/pipeline-lock';
import { readPrivateFile } from './private-file';

const reviewerSchema = z.strictObject({
  name: z.string(),
  token_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  added_at: z.iso.datetime({ offset: true }),
});
const reviewersFileSchema = z.strictObject({ schema: z.literal('reviewers/v1'), reviewers: z.array(reviewerSchema) });
type ReviewersFile = z.infer<typeof reviewersFileSchema>;

/** `rvw_` + 43 base64url characters: recognisable in a leak scan, and the shape the sign-in form accepts. */
export const TOKEN_PATTERN = /^rvw_[A-Za-z0-9_-]{43}$/;

export function reviewersFile(dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return readSetting('EPISODES_REVIEWERS_FILE', env) ?? path.join(dataDir, 'review', 'reviewers.json');
}

/** What a session made by a token is bound to: that token's digest, so rotating the token ends the session. */
export function tokenIdentity(digestHex: string): string {
  return `token:${digestHex}`;
}

export class ReviewerStore {
  private readonly lock: DirectoryLock;

  constructor(readonly file: string) {
    this.lock = new DirectoryLock(`${path.resolve(file)}.lock`, 'reviewers file lock');
  }

  list(): { name: string; added_at: string }[] {
    return this.read().reviewers.map(({ name, added_at }) => ({ name, added_at }));
  }

  /** Adds a reviewer and returns their token: the only time it exists outside the reviewer's hands. */
  async add(name: string, at = new Date()): Promise<string> {
    const problem = tokenNameProblem(name);
    if (problem !== undefined) throw new PipelineError(ErrorType.InvalidInput, problem);
    return this.change((current) => {
      if (current.reviewers.some((r) => r.name === name)) {
        throw new PipelineError(ErrorType.InvalidState, `reviewer ${JSON.stringify(name)} exists; remove it first`);
      }
      const { token, reviewer } = newToken(name, at);
      return { next: { ...current, reviewers: [...current.reviewers, reviewer] }, result: token };
    });
  }

  /** A new token for an existing reviewer; the old one, and every session it made, stop working. */
  async rotate(name: string, at = new Date()): Promise<string> {
    return this.change((current) => {
      if (!current.reviewers.some((r) => r.name === name)) throw noReviewer(name);
      const { token, reviewer } = newToken(name, at);
      return {
        next: { ...current, reviewers: current.reviewers.map((r) => (r.name === name ? reviewer : r)) },
        result: token,
      };
    });
  }

  /** Revokes the reviewer's token; their open sessions end at their next request. */
  async remove(name: string): Promise<void> {
    await this.change((current) => {
      if (!current.reviewers.some((r) => r.name === name)) throw noReviewer(name);
      return { next: { ...current, reviewers: current.reviewers.filter((r) => r.name !== name) }, result: undefined };
    });
  }

  /** The reviewer holding this token, or undefined. Every digest is compared, in constant time each, no early exit. */
  authenticate(token: string): { name: string; identity: string } | undefined {
    const presented = tokenDigest(token);
    let match: { name: string; identity: string } | undefined;
    for (const r of this.read().reviewers) {
      if (timingSafeEqual(presented, Buffer.from(r.token_sha256, 'hex')) && match === undefined) {
        match = { name: r.name, identity: tokenIdentity(r.token_sha256) };
      }
    }
    return match;
  }

  exists(name: string): boolean {
    return this.read().reviewers.some((r) => r.name === name);
  }

  /** Whether `name` still holds the token of `identity` (not removed, not rotated since). */
  holds(name: string, identity: string): boolean {
    return this.read().reviewers.some((r) => r.name === name && tokenIdentity(r.token_sha256) === identity);
  }

  private read(): ReviewersFile {
    const text = readPrivateFile(this.file, 'reviewers file');
    return text === undefined
      ? { schema: 'reviewers/v1', reviewers: [] }
      : parseJsonText(this.file, text, reviewersFileSchema);
  }

  private async change<T>(edit: (current: ReviewersFile) => { next: ReviewersFile; result: T }): Promise<T> {
    await ensureDirDurable(path.dirname(path.resolve(this.file)));
    return this.lock.withLock(async () => {
      const { next, result } = edit(this.read());
      await writeJsonDurable(this.file, next);
      return result;
    });
  }
}

/** Why `name` cannot be a token reviewer's: the names of provider users (`oidc:…`, emails) are theirs alone. */
function tokenNameProblem(name: string): string | undefined {
  if (name.startsWith(OIDC_NAME_PREFIX)) return `names starting with ${OIDC_NAME_PREFIX} belong to sign-in users`;
  // A provider user decides under their email: a token reviewer named like one would pass for them.
  if (name.includes('@')) return 'names with @ are email addresses, which belong to sign-in users';
  return approverProblem(name);
}

function newToken(name: string, at: Date) {
  const token = `rvw_${randomBytes(32).toString('base64url')}`;
  return { token, reviewer: { name, token_sha256: tokenDigest(token).toString('hex'), added_at: at.toISOString() } };
}

function noReviewer(name: string): PipelineError {
  return new PipelineError(ErrorType.InvalidInput, `no reviewer ${JSON.stringify(name)}`);
}

function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
