/** The visibility query of pinned runs: a build id is a string literal, whatever characters it holds. */
import assert from 'node:assert/strict';
import type { ConnectionLike } from '@temporalio/client';
import { countPinnedRuns } from '../../../src/process/worker-deployment';

describe('pinned runs query', () => {
  it('escapes quotes and backslashes of the build id', async () => {
    const queries: string[] = [];
    const connection = {
      workflowService: {
        countWorkflowExecutions: (r: { query: string }) => {
          queries.push(r.query);
          return Promise.resolve({ count: 0 });
        },
      },
    } as unknown as ConnectionLike;
    await countPinnedRuns(connection, 'default', { deploymentName: 'weekly-media', buildId: "x' OR 'a'='a\\" });
    assert.equal(
      queries[0],
      "TemporalWorkerDeploymentVersion = 'weekly-media:x\\' OR \\'a\\'=\\'a\\\\' AND " +
        "TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'",
    );
  });
});
