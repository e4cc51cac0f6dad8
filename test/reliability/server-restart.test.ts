/**
 * Server restart: the Temporal dev server (the CLI binary from temporal-dev.sh, SQLite on disk) is stopped while
 * productions are in flight and started again on the same database and port, twice: once while video and cover are
 * at the vendor, once while assemblies are. Worker processes and the client reconnect by themselves; every run must
 * finish with the invariants holding.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../../src/shared';
import type { VendorSimulator } from '../../src/vendor-sim/simulator';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { startTestVendor } from '../helpers/deps';
import { temporalCliPath } from '../helpers/temporal';
import {
  approveProductions,
  assertInvariants,
  reportTable,
  invariantColumns,
  sleep,
  startWorkerProcess,
  until,
  type WorkerProcess,
} from '../helpers/reliability';

const execFileAsync = promisify(execFile);
const RUNS = [
  ...['a', 'b', 'c'].map((k) => ({ key: `restart-${k}`, week: '2027-W40' })),
  ...['d', 'e', 'f'].map((k) => ({ key: `restart-${k}`, week: '2027-W41' })),
];

/** A dev server on a fixed port and database file, so that it can be stopped and started again as the same server. */
class DevServer {
  private child: ChildProcess | undefined;
  private log = '';
  readonly address: string;

  constructor(
    readonly dbFile: string,
    readonly port: number,
  ) {
    this.address = `127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      temporalCliPath(),
      [
        'server',
        'start-dev',
        ...['--db-filename', this.dbFile, '--port', String(this.port), '--ip', '127.0.0.1', '--headless'],
        ...['--log-level', 'error'],
        ...[EpisodeIdSearchAttribute, WeekIdSearchAttribute].flatMap((a) => [
          '--search-attribute',
          `${a.name}=Keyword`,
        ]),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => (this.log += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
    await until(
      `dev server on ${this.address}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`dev server exited ${child.exitCode}:\n${this.log}`);
        await execFileAsync(temporalCliPath(), ['operator', 'cluster', 'health', '--address', this.address]);
        return true;
      },
      120_000,
    );
  }

  /** SIGTERM, as an operator stops it; SIGKILL only if it has not exited after 60 s. Returns how it ended. */
  async stop(): Promise<string> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return 'not running';
    const exited = new Promise<string>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`)),
    );
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const how = await exited;
    clearTimeout(timer);
    return how;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

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
    server = new DevServer(path.join(dir, 'temporal.sqlite'), await freePort());
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
    await until('first paid steps accepted', () => Promise.resolve(vendor.billing().length >= 3 || undefined), 120_000);
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
