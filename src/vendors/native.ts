/** The project's own vendor API (docs/vendor-api.md): idempotency keys, lookup by key, fixed prices, a journal. */
import type { PaidStep } from '../domain/paid-step';
import type { VendorProfile } from '../domain/vendor-profile';
import type { VendorJob as NativeJob } from '../vendor-api/api';
import type { VendorClient } from '../vendor-api/client';
import type { PriceRange, Submission, VendorAdapter, VendorJob } from './port';

export const NATIVE_PROFILE: VendorProfile = {
  idempotency: 'key',
  lookup: 'by-key',
  lookupSeesEveryJob: true,
  completion: 'poll',
  charging: { mode: 'fixed' },
  artifactTtlMs: null,
  failedJobsUnbilled: false,
  billingJournal: true,
};

export function nativeAdapter(client: VendorClient): VendorAdapter {
  return {
    name: 'native',
    profile: NATIVE_PROFILE,
    async prices() {
      const quotes = await client.getPrices();
      const range = (step: PaidStep): PriceRange => ({
        min_cents: quotes[step].amount_cents,
        max_cents: quotes[step].amount_cents,
        currency: quotes[step].currency,
      });
      return { video: range('video'), cover: range('cover'), rework: range('rework'), assembly: range('assembly') };
    },
    async submit(s: Submission) {
      const accepted = await client.submitJob({ kind: s.step, episode_id: s.episodeId, spec: s.spec }, s.ref);
      return {
        job_id: accepted.job_id,
        kind: s.step,
        episode_id: s.episodeId,
        status: accepted.status,
        cost: accepted.quoted_cost,
        artifact: null,
        client_ref: accepted.client_ref,
        accepted_at: new Date().toISOString(),
      };
    },
    async find(ref: string) {
      const answer = await client.findJobsByClientRef(ref);
      return answer.supported ? answer.jobs.map(fromNative) : 'unsupported';
    },
    async get(jobId: string) {
      return fromNative(await client.getJob(jobId));
    },
    async download(job: VendorJob) {
      return (await client.downloadArtifact(job.artifact ?? '')).bytes;
    },
    async billing(ref?: string) {
      return client.getBilling({}, ref);
    },
  };
}

function fromNative(job: NativeJob): VendorJob {
  const { quoted_cost, artifact_id, ...rest } = job;
  return { ...rest, cost: quoted_cost, artifact: artifact_id };
}
