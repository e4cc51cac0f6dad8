/**
 * Failpoints: named places at durable steps where tests make a process die, throw or stall.
 * Off unless EPISODES_FAILPOINTS names a point, e.g. `allocation.after-commit=kill,submission.accepted=delay:500`.
 * When the variable is unset `failpoint()` is a single map lookup on an empty map.
 *
 * Actions: `kill` (SIGKILL this process), `throw` (a plain Error), `delay:<ms>`, `enospc` / `eio` (an fs-style error).
 * An optional `@<n>` suffix fires only on the n-th hit (1-based), e.g. `allocation.after-commit=kill@3`.
 */
type Action = { kind: 'kill' | 'throw' | 'enospc' | 'eio' } | { kind: 'delay'; ms: number };

interface Rule {
  action: Action;
  onHit: number | null;
  hits: number;
}

function parseRules(spec: string | undefined): Map<string, Rule> {
  const rules = new Map<string, Rule>();
  for (const raw of (spec ?? '').split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const m = /^([a-z0-9.-]+)=(kill|throw|enospc|eio|delay:(\d+))(?:@(\d+))?$/.exec(item);
    if (!m) throw new Error(`EPISODES_FAILPOINTS: cannot parse ${JSON.stringify(item)}`);
    const [, name, actionText, ms, nth] = m;
    const action: Action =
      ms !== undefined
        ? { kind: 'delay', ms: Number(ms) }
        : { kind: actionText as 'kill' | 'throw' | 'enospc' | 'eio' };
    rules.set(name!, { action, onHit: nth === undefined ? null : Number(nth), hits: 0 });
  }
  return rules;
}

const rules = parseRules(process.env.EPISODES_FAILPOINTS);

export class FailpointError extends Error {
  constructor(
    readonly point: string,
    readonly code?: string,
  ) {
    super(code ? `${code}: injected at failpoint ${point}` : `injected failure at failpoint ${point}`);
  }
}

export async function failpoint(name: string): Promise<void> {
  if (rules.size === 0) return;
  const rule = rules.get(name);
  if (!rule) return;
  rule.hits += 1;
  if (rule.onHit !== null && rule.hits !== rule.onHit) return;
  switch (rule.action.kind) {
    case 'kill':
      process.kill(process.pid, 'SIGKILL');
      // SIGKILL is delivered asynchronously; never let the caller run past the point.
      await new Promise<never>(() => undefined);
      return;
    case 'throw':
      throw new FailpointError(name);
    case 'enospc':
      throw Object.assign(new FailpointError(name, 'ENOSPC'), { code: 'ENOSPC' });
    case 'eio':
      throw Object.assign(new FailpointError(name, 'EIO'), { code: 'EIO' });
    case 'delay':
      await new Promise((resolve) => setTimeout(resolve, (rule.action as { ms: number }).ms));
      return;
  }
}
