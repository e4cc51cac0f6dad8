/** Each kind's declared maximum for a metered job (EPISODES_VENDOR_<KIND>_MAX_CENTS): what a metered adapter reserves. */
import type { PaidStep } from '../domain/paid-step';
import { readSettings } from '../settings/read';

export function meteredMaxCentsFromEnv(env: NodeJS.ProcessEnv = process.env): Record<PaidStep, number> {
  const s = readSettings(
    [
      'EPISODES_VENDOR_VIDEO_MAX_CENTS',
      'EPISODES_VENDOR_COVER_MAX_CENTS',
      'EPISODES_VENDOR_REWORK_MAX_CENTS',
      'EPISODES_VENDOR_ASSEMBLY_MAX_CENTS',
    ],
    env,
  );
  return {
    video: s.EPISODES_VENDOR_VIDEO_MAX_CENTS,
    cover: s.EPISODES_VENDOR_COVER_MAX_CENTS,
    rework: s.EPISODES_VENDOR_REWORK_MAX_CENTS,
    assembly: s.EPISODES_VENDOR_ASSEMBLY_MAX_CENTS,
  };
}
