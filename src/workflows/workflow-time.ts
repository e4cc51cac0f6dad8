/** Workflow time as an ISO string: the SDK makes `Date` deterministic on replay inside a workflow. */
export function workflowNow(): string {
  return new Date().toISOString();
}
