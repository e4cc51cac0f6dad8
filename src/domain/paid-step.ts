/** The four kinds of paid vendor step. Below both `names.ts` (step keys) and `episode-state.ts` (stored records). */
import { z } from 'zod';

export const PAID_STEPS = ['video', 'cover', 'rework', 'assembly'] as const;
export const paidStepSchema = z.enum(PAID_STEPS);
export type PaidStep = z.infer<typeof paidStepSchema>;
