/**
 * The campaign's own stack, started with the helpers the tests and benchmarks use: a Temporal dev server on a
 * database file (a restart keeps its state), the vendor simulator with its billing journal on disk, a review webhook
 * receiver, the store (file, or PostgreSQL primary + standby) and the worker pool.
 */
import type { UnsafeVariant } from '../testkit/unsafe-stores';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DevServer } from '../testkit/dev-server';
import { startWebhookReceiver, type ReceivedNotice, type WebhookReceiver } from '../testkit/webhook-receiver';
import type { Plan } from './plan';
import { FileStoreHost, PostgresStoreHost, type StoreHost } from './store-host';
import { CampaignVendors, type VendorEvent } from './vendors';
import { WorkerPool } from './workers';

/** Vendor jobs take this long: long enough to be polled, short enough for a year in an hour. */
export const JOB_DURATION_MS = 400;
/** EPISODES_LOCK_STALE_MS of the campaign's workers: a frozen holder loses its lease within seconds. */
export const LOCK_STALE_MS = 3_000;

export interface StackOptions {
  out: string;
  plan: Plan;
  unsafe?: UnsafeVariant;
  log: (line: string) => void;
  onVendorRequest: (entry: VendorEvent) => void;
}

export class Stack {
  private receiver: WebhookReceiver | undefined;
  /** Every notice any incarnation of the receiver got. */
  readonly notices: ReceivedNotice[] = [];
  private receiverPort = 0;

  private constructor(
    readonly server: DevServer,
    readonly connection: Connection,
    readonly client: Client,
    /** The simulators the plan's vendor assignment needs (`--vendor`). */
    readonly vendors: CampaignVendors,
    readonly store: StoreHost,
    readonly pool: WorkerPool,
    readonly taskQueue: string,
    readonly paths: { temporalDb: string; storeDir: string },
  ) {}

  static async start(o: StackOptions): Promise<Stack> {
    const paths = {
      temporalDb: path.join(o.out, 'temporal.sqlite'),
      storeDir: path.join(o.out, 'store'),
    };
    await fs.mkdir(o.out, { recursive: true });
    const server = await DevServer.onFreePort(paths.temporalDb);
    await server.start();
    const vendors = await CampaignVendors.start({
      choice: o.plan.vendor,
      out: o.out,
      seed: o.plan.seed,
      jobDurationMs: JOB_DURATION_MS,
      onEvent: o.onVendorRequest,
    });
    const store =
      o.plan.store === 'file'
        ? await FileStoreHost.start(paths.storeDir, path.join(o.out, 'backups'))
        : await PostgresStoreHost.start(paths.storeDir, `campaign-${process.pid}`);
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    const taskQueue = `campaign-${o.plan.seed}`;
    const pool = new WorkerPool(
      {
        address: () => server.address,
        taskQueue,
        vendorUrl: vendors.nativeUrl(),
        vendorEnv: vendors.env(),
        callbacks: vendors.callsBack(),
        webhookUrl: '',
        store,
        lockStaleMs: LOCK_STALE_MS,
        unsafe: o.unsafe,
      },
      o.plan.workers,
      o.log,
    );
    await pool.reservePorts();
    const stack = new Stack(server, connection, client, vendors, store, pool, taskQueue, paths);
    await stack.receiverUp();
    pool.setWebhookUrl(stack.webhookUrl());
    await pool.startAll();
    return stack;
  }

  webhookUrl(): string {
    return this.receiver?.url ?? '';
  }

  receiverIsUp(): boolean {
    return this.receiver !== undefined;
  }

  /** The receiver (again), on the same port as before: the workers' webhook URL does not change. */
  async receiverUp(): Promise<void> {
    if (this.receiver) return;
    const receiver = await startWebhookReceiver(() => 200, {
      port: this.receiverPort,
      onReceive: (n) => this.notices.push(n),
    });
    this.receiverPort = receiver.port;
    this.receiver = receiver;
  }

  async receiverDown(): Promise<void> {
    const r = this.receiver;
    this.receiver = undefined;
    await r?.close();
  }

  async stop(): Promise<void> {
    await this.pool.stopAll().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
    await this.server.stop().catch(() => undefined);
    await this.vendors.close().catch(() => undefined);
    await this.receiverDown().catch(() => undefined);
    await this.store.stop().catch(() => undefined);
  }
}
