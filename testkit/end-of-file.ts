/**
 * Clean-ups for the end of each test file when files share a process: a `mocha --parallel` worker runs one file after
 * another on modules loaded once, so a module's own root `after` hook would only ever run for the first of them.
 * setup.ts's root `afterAll` (once per file in a worker, once per run otherwise) runs these.
 */
const tasks: Array<() => Promise<void>> = [];

export const inParallelWorker = process.env.MOCHA_WORKER_ID !== undefined;

export function atEndOfEachFile(task: () => Promise<void>): void {
  tasks.push(task);
}

export async function runEndOfFileTasks(): Promise<void> {
  for (const task of tasks) await task();
}
