/**
 * Server restart: the Temporal dev server (the CLI binary from temporal-dev.sh, SQLite on disk) is stopped while
 * productions are in flight and started again on the same database and port, twice: once while video and cover are
 * at the vendor, once while assemblies are. Worker processes and the client reconnect by themselves; every run must
 * finish with the invariants holding.
 */
import assert from 'node:assert/strict';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor } from '../../testkit/deps';
import { DevServer } from '../../testkit/dev-server';
import {
  approveProductions,
  assertInvariants,
  reportTable,
  invariantColumns,
  sleep,
  startWorkerProcess,
  until,
  type WorkerProcess,
} from '../../testkit/reliability';

const RUNS = [
  ...['a', 'b', 'c'].map((k) => ({ key: `restart-${k}`, week: '2027-W40' })),
  ...['d', 'e', 'f'].map((k) => ({ key: `restart-${k}`, week: '2027-W41' })),
];

// `npm run test:faults` (and nightly) only: on every push the smoke campaign restarts the dev server mid-run.
const FULL = process.env.EPISODES_FAULTS === 'full';

if (FULL)
  describe('server restart: the dev server stopped mid-production and started again on the same database', function () {
    this.timeout(20 * 60_000);
    let server: DevServer;
    let connection: Connection | undefined;
    let vendor: VendorSimulator;
    let dir: string;
    const workers: WorkerProcess[] = [];
    const outages: Record<string, string | number>[] = [];

    before(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'restart-'));
      server = await DevServer.onFreePort(path.join(dir, 'temporal.sqlite'));
      await server.start();
      // Jobs take a while at the vendor, so that the server goes away while paid steps are in flight.
      vendor = await startTestVendor({ jobDurationMs: 1_500 });
    });
    after(async () => {
      await Promise.all(workers.map((w) => w.stop()));
      await connection?.close();
      await server?.stop();
      await vendor?.close();
      if (dir) await fs.rm(dir, { recursive: true, force: true });
      if (outages.length) await reportTable('server restarts', outages);
    });

    it('every run finishes after two restarts, with the invariants holding', async () => {
      const dataDir = path.join(dir, 'data');
      const taskQueue = `restart-${process.pid}`;
      for (const name of ['r1', 'r2']) {
        const w = startWorkerProcess(name, { address: server.address, taskQueue, dataDir, vendorUrl: vendor.url });
        workers.push(w);
      }
      await Promise.all(workers.map((w) => w.waitUntilPolling()));
      connection = await Connection.connect({ address: server.address });
      const client = new Client({ connection });

      const restart = async (when: string) => {
        const charges = vendor.billing().length;
        const how = await server.stop();
        // Down long enough for workers to notice and for vendor jobs to finish meanwhile.
        await sleep(5_000);
        await server.start();
        outages.push({ outage: when, 'charges at stop': charges, 'server stopped by': how, 'workers alive': 0 });
      };

      await Promise.all(
        RUNS.map(({ key, week }) =>
          client.workflow.start(weeklyEpisodeWorkflow, { workflowId: key, taskQueue, args: [{ week }] }),
        ),
      );
      // 1. While video and cover are at the vendor: some accepted, none approved yet.
      await until(
        'first paid steps accepted',
        () => Promise.resolve(vendor.billing().length >= 3 || undefined),
        120_000,
      );
      await restart('video/cover at the vendor');

      const productions = approveProductions(client, dataDir, RUNS.length, 10 * 60_000);
      productions.catch(() => undefined);
      // 2. While assemblies are at the vendor: approved, not all completed.
      await until(
        'an assembly accepted',
        () => Promise.resolve(vendor.billing().some((c) => c.kind === 'assembly') || undefined),
        5 * 60_000,
      );
      await restart('assemblies at the vendor');

      const outcomes = await productions;
      assert.deepEqual(outcomes.map((o) => o.result.outcome).sort(), Array(RUNS.length).fill('completed'));
      const weekly = await Promise.all(
        RUNS.map(({ key }) => client.workflow.getHandle<typeof weeklyEpisodeWorkflow>(key).result()),
      );
      assert.deepEqual(weekly.map((w) => w.episodeId).sort(), [
        '2027-W40-0',
        '2027-W40-1',
        '2027-W40-2',
        '2027-W41-0',
        '2027-W41-1',
        '2027-W41-2',
      ]);
      const alive = workers.filter((w) => w.alive()).length;
      for (const o of outages) o['workers alive'] = alive;
      assert.equal(alive, workers.length, 'workers reconnected instead of exiting');

      const counts = await assertInvariants(dataDir, vendor, { keys: RUNS.map((r) => r.key), allCompleted: true });
      assert.equal(counts.charges, RUNS.length * 3);
      for (const o of outages) {
        Object.assign(o, { runs: RUNS.length, ...invariantColumns(counts) });
      }
    });
  });
