/**
 * How a waiting process hands its allocation to the file store's lock holder, and how the answer comes back (the
 * transport is lock-handoff.ts). Both sides validate: a request the holder cannot read is declined (the waiter then
 * allocates itself), an answer the waiter cannot read is dropped (it allocates itself; the key makes that a no-op if
 * the holder did commit it). Versioned, so that a newer holder never misreads an older waiter or the reverse.
 */
import { z } from 'zod';
import { parseAllocationKey } from '../domain/allocation-key';
import { formatEpisodeId, MAX_SEQUENCE } from '../domain/episode-id';
import { allocatedBySchema, episodeIdSchema, weekIdSchema } from '../domain/episode-state';
import { PipelineError } from '../domain/errors';
import { ErrorType } from '../shared';
import type { AllocationRequest, AllocationResult } from './episode-store';
import type { Delegation } from './pipeline-lock';

const requestSchema = z
  .strictObject({
    v: z.literal(1),
    allocationKey: z.string().transform((k) => parseAllocationKey(k)),
    weekId: weekIdSchema,
    allocatedBy: allocatedBySchema,
  })
  .transform(({ allocationKey, weekId, allocatedBy }): AllocationRequest => ({ allocationKey, weekId, allocatedBy }));

const replySchema = z.strictObject({
  v: z.literal(1),
  outcome: z.discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('allocated'),
      episodeId: episodeIdSchema,
      weekId: weekIdSchema,
      sequence: z.number().int().nonnegative().max(MAX_SEQUENCE),
      created: z.boolean(),
    }),
    z.strictObject({
      kind: z.literal('refused'),
      type: z.enum(Object.values(ErrorType) as [ErrorType, ...ErrorType[]]),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
    }),
  ]),
});
type Reply = z.infer<typeof replySchema>;

/** The waiting side: the request to send, and how to turn the holder's answer into this allocation's outcome. */
export function allocationDelegation(request: AllocationRequest): Delegation<AllocationResult> {
  return {
    request: JSON.stringify({ v: 1, ...request }),
    accept(text) {
      let reply: Reply;
      try {
        reply = replySchema.parse(JSON.parse(text));
      } catch {
        return undefined;
      }
      const o = reply.outcome;
      if (o.kind === 'refused') throw new PipelineError(o.type, o.message, o.details);
      // Not an answer to this request, or not a consistent one.
      if (o.weekId !== request.weekId || o.episodeId !== formatEpisodeId(o.weekId, o.sequence)) return undefined;
      return { value: { episodeId: o.episodeId, weekId: o.weekId, sequence: o.sequence, created: o.created } };
    },
  };
}

/** The holder's side: a waiter's request, or undefined if it cannot be read (decline it). */
export function readDelegatedRequest(text: string): AllocationRequest | undefined {
  try {
    return requestSchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}

export function allocatedReply(result: AllocationResult): string {
  return JSON.stringify({ v: 1, outcome: { kind: 'allocated', ...result } } satisfies Reply);
}

/** A refusal the waiter would have met itself (nothing was written for it): it throws the same error. */
export function refusedReply(e: PipelineError): string {
  return JSON.stringify({
    v: 1,
    outcome: { kind: 'refused', type: e.type, message: e.message, details: e.details },
  } satisfies Reply);
}
