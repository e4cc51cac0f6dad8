import type { Client, Connection } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig, type PipelineConfig } from '../process/config';
import { defaultDataDir } from '../store/file-store';
import type { EpisodeStore } from '../store/episode-store';
import { openStore, storeApplicationName } from '../store/open-store';
import { refusePasswordOnCommandLine } from '../store/postgres-url';

/**
 * Lazily built dependencies of CLI commands: a command that never talks to Temporal never connects, nor loads the
 * Temporal client (a third of a command's start-up).
 */
export class CliContext {
  private client?: Client;
  private connection?: Connection;
  private store?: EpisodeStore;
  private loadedConfig?: PipelineConfig;

  constructor(private readonly program: Command) {}

  /** Read at first use, so that `--help` and a usage error never depend on the environment being valid. */
  get config(): PipelineConfig {
    return (this.loadedConfig ??= loadConfig());
  }

  get dataDir(): string {
    const opts = this.program.opts<{ dataDir?: string }>();
    return opts.dataDir ?? defaultDataDir();
  }

  getStore(): EpisodeStore {
    const { dataDir, storeUrl } = this.program.opts<{ dataDir?: string; storeUrl?: string }>();
    // The command's name in pg_stat_activity: `episodes-cli-<command>-<host>-<pid>`.
    const command = this.program.args[0] ?? 'command';
    if (storeUrl) refusePasswordOnCommandLine(storeUrl, '--store-url');
    this.store ??= openStore({ dataDir, storeUrl, applicationName: storeApplicationName(`cli-${command}`) });
    return this.store;
  }

  /** The raw connection (Operator and Workflow services), with the TEMPORAL_* profile every process uses. */
  async getConnection(): Promise<Connection> {
    if (this.connection === undefined) {
      const { connectClient } = await import('../process/temporal-connection.js');
      this.connection = await connectClient(this.config.temporal);
    }
    return this.connection;
  }

  async getClient(): Promise<Client> {
    if (this.client === undefined) {
      const { Client } = await import('@temporalio/client');
      this.client = new Client({ connection: await this.getConnection(), namespace: this.config.temporal.namespace });
    }
    return this.client;
  }

  async close(): Promise<void> {
    await this.store?.close();
    await this.connection?.close();
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}
