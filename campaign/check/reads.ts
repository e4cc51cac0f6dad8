/**
 * What the checker reads, each with its own small schema: each vendor simulator's billing journal, the store
 * through the `episodes` CLI (`list --json`, `ledger --no-vendor --json`, `verify --json`, `status`), Temporal
 * visibility, and the campaign's plan and history. It shares no code with the store or the activities it checks.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { z } from 'zod';

const execFileAsync = promisify(execFile);
const CLI = path.resolve(__dirname, '..', '..', 'src', 'cli.js');

const chargeSchema = z.object({
  job_id: z.string(),
  episode_id: z.string(),
  kind: z.string(),
  client_ref: z.string().nullable(),
  amount_cents: z.number().int(),
  currency: z.string(),
});
export type Charge = z.infer<typeof chargeSchema>;

/** A simulator's own record of every charge, in its own format: `native` (its state file), `fal`, `replicate`. */
export interface Journal {
  flavor: string;
  file: string;
}

const falChargeSchema = z.object({
  request_id: z.string(),
  ref: z.string().nullable(),
  amount_cents: z.number().int(),
  currency: z.string(),
});
const replicateEntrySchema = z.object({
  id: z.string(),
  correlation: z.string().nullable(),
  amount_cents: z.number().int(),
  currency: z.string(),
});
/** Our correlation value, `<episode>:<step>:r<round>`, as the input carried it to fal and Replicate. */
const REF = /^(.+):(video|cover|rework|assembly):r\d+$/;

/**
 * Every charge of every vendor the campaign used (the union of their journals), each named as the ledger names its
 * job: the native job id; fal's `<ref>@<request_id>` (docs/vendors.md, the fal adapter's job id); the prediction id.
 */
export function readBilling(journals: readonly Journal[]): Charge[] {
  return journals.flatMap((j) => {
    const raw = JSON.parse(readFileSync(j.file, 'utf8')) as unknown;
    if (j.flavor === 'fal') {
      return z
        .object({ charges: z.array(falChargeSchema) })
        .parse(raw)
        .charges.map((c) => byRef(c.ref, c.ref === null ? c.request_id : `${c.ref}@${c.request_id}`, c));
    }
    if (j.flavor === 'replicate') {
      return z
        .object({ entries: z.array(replicateEntrySchema) })
        .parse(raw)
        .entries.map((c) => byRef(c.correlation, c.id, c));
    }
    return z.object({ charges: z.array(chargeSchema) }).parse(raw).charges;
  });
}

function byRef(ref: string | null, jobId: string, c: { amount_cents: number; currency: string }): Charge {
  const m = REF.exec(ref ?? '');
  return {
    job_id: jobId,
    episode_id: m?.[1] ?? '(unknown)',
    kind: m?.[2] ?? '(unknown)',
    client_ref: ref,
    amount_cents: c.amount_cents,
    currency: c.currency,
  };
}

const episodeSchema = z.object({
  episode_id: z.string(),
  week_id: z.string(),
  sequence: z.number().int(),
  status: z.string(),
  allocation_key: z.string().nullable(),
});
export type ListedEpisode = z.infer<typeof episodeSchema>;

const ledgerSchema = z.object({
  episodes: z.array(
    z.object({
      episode_id: z.string(),
      steps: z.array(z.object({ step: z.string(), remote_job_id: z.string(), amount_cents: z.number().int() })),
    }),
  ),
});
export type LedgerLine = { episode_id: string; step: string; remote_job_id: string; amount_cents: number };

const verifySchema = z.object({
  ok: z.boolean(),
  episodes_checked: z.number(),
  problems: z.array(z.object({ code: z.string().optional(), message: z.string().optional() }).loose()),
});
export type VerifyReport = z.infer<typeof verifySchema>;

export class StoreReader {
  constructor(private readonly env: NodeJS.ProcessEnv) {}

  private async cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await execFileAsync(process.execPath, [CLI, ...args], {
        env: { ...process.env, ...this.env },
        maxBuffer: 256 * 1024 * 1024,
      });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const x = e as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
    }
  }

  async episodes(): Promise<ListedEpisode[]> {
    const r = await this.cli(['list', '--json']);
    if (r.code !== 0) throw new Error(`episodes list: ${r.stderr}`);
    return z.array(episodeSchema).parse(JSON.parse(r.stdout));
  }

  async ledger(): Promise<LedgerLine[]> {
    const r = await this.cli(['ledger', '--no-vendor', '--json']);
    if (r.code !== 0) throw new Error(`episodes ledger: ${r.stderr}`);
    const view = ledgerSchema.parse(JSON.parse(r.stdout));
    return view.episodes.flatMap((e) => e.steps.map((s) => ({ episode_id: e.episode_id, ...s })));
  }

  async verify(): Promise<VerifyReport> {
    const r = await this.cli(['verify', '--json']);
    try {
      return verifySchema.parse(JSON.parse(r.stdout));
    } catch {
      return {
        ok: false,
        episodes_checked: 0,
        problems: [{ message: `verify printed no report: ${r.stderr.trim()}` }],
      };
    }
  }

  /** `PARKED` lines of `episodes status` (the reason and the command the system names). */
  async parkedLines(episodeId: string): Promise<string[]> {
    const r = await this.cli(['status', episodeId]);
    return r.stdout.split('\n').filter((l) => /^\s*PARKED\s/.test(l));
  }
}

export interface VisibleRun {
  workflowId: string;
  type: string;
  status: string;
  /** The run's `EpisodeId` search attribute (a weekly run's: the id its allocation answered). */
  episodeId?: string;
}

const episodeIdKey = defineSearchAttributeKey('EpisodeId', SearchAttributeType.KEYWORD);

/** Every workflow the Temporal server knows of (visibility), and the closed ones' histories replayed. */
export class TemporalReader {
  private constructor(
    private readonly connection: Connection,
    readonly client: Client,
  ) {}

  static async connect(address: string): Promise<TemporalReader> {
    const connection = await Connection.connect({ address });
    return new TemporalReader(connection, new Client({ connection }));
  }

  async runs(query?: string): Promise<VisibleRun[]> {
    const out: VisibleRun[] = [];
    for await (const wf of this.client.workflow.list(query ? { query } : {})) {
      const episodeId = wf.typedSearchAttributes.get(episodeIdKey);
      out.push({ workflowId: wf.workflowId, type: wf.type, status: wf.status.name, episodeId });
    }
    return out;
  }

  close(): Promise<void> {
    return this.connection.close();
  }
}
