/**
 * Reviewers of the review desk and their sign-in tokens. A token is 32 random bytes, shown once by `add-reviewer`;
 * only its sha256 is stored (a random 256-bit token needs no slow hash: there is nothing to guess from the digest).
 * The file is `<data dir>/review/reviewers.json` (mode 0600, written durably), or EPISODES_REVIEWERS_FILE; it is a
 * local file for both stores (with PostgreSQL too), because it belongs to the desk's host, not to the episodes.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as path from 'node:path';
import { z } from 'zod';
import { approverProblem } from '../domain/decision';
import { PipelineError, ErrorType } from '../domain/errors';
import { ensureDirDurable, readJsonFile, writeJsonDurable } from '../files/durable-fs';
import { readSetting } from '../settings/read';

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

export class ReviewerStore {
  constructor(readonly file: string) {}

  list(): { name: string; added_at: string }[] {
    return this.read().reviewers.map(({ name, added_at }) => ({ name, added_at }));
  }

  /** Adds a reviewer and returns their token: the only time it exists outside the reviewer's hands. */
  async add(name: string, at = new Date()): Promise<string> {
    const problem = approverProblem(name);
    if (problem !== undefined) throw new PipelineError(ErrorType.InvalidInput, problem);
    const current = this.read();
    if (current.reviewers.some((r) => r.name === name)) {
      throw new PipelineError(ErrorType.InvalidState, `reviewer ${JSON.stringify(name)} exists; remove it first`);
    }
    const token = `rvw_${randomBytes(32).toString('base64url')}`;
    const reviewer = { name, token_sha256: tokenDigest(token).toString('hex'), added_at: at.toISOString() };
    await this.write({ ...current, reviewers: [...current.reviewers, reviewer] });
    return token;
  }

  /** Revokes the reviewer's token; their open sessions end at their next request. */
  async remove(name: string): Promise<void> {
    const current = this.read();
    if (!current.reviewers.some((r) => r.name === name)) {
      throw new PipelineError(ErrorType.InvalidInput, `no reviewer ${JSON.stringify(name)}`);
    }
    await this.write({ ...current, reviewers: current.reviewers.filter((r) => r.name !== name) });
  }

  /** The reviewer holding this token, or undefined. Every digest is compared, in constant time each, no early exit. */
  authenticate(token: string): string | undefined {
    const presented = tokenDigest(token);
    let match: string | undefined;
    for (const r of this.read().reviewers) {
      if (timingSafeEqual(presented, Buffer.from(r.token_sha256, 'hex')) && match === undefined) match = r.name;
    }
    return match;
  }

  exists(name: string): boolean {
    return this.read().reviewers.some((r) => r.name === name);
  }

  private read(): ReviewersFile {
    return readJsonFile(this.file, reviewersFileSchema) ?? { schema: 'reviewers/v1', reviewers: [] };
  }

  private async write(value: ReviewersFile): Promise<void> {
    await ensureDirDurable(path.dirname(path.resolve(this.file)));
    await writeJsonDurable(this.file, value);
  }
}

function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
