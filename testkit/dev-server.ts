/**
 * A Temporal dev server on a fixed port and SQLite file, so that it can be stopped and started again as the same
 * server (the CLI binary from temporal-dev.sh, with our search attributes). Used by the server-restart test and the
 * campaign.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import { promisify } from 'node:util';
import { EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../src/domain/names';
import { DEV_SERVER_EXTRA_ARGS, temporalCliPath } from './temporal';
import { until } from './wait';

/** How much of the server's output a failure quotes. */
const LOG_TAIL_CHARS = 64 * 1024;

const execFileAsync = promisify(execFile);

export class DevServer {
  private child: ChildProcess | undefined;
  private log = '';
  readonly address: string;

  constructor(
    readonly dbFile: string,
    readonly port: number,
  ) {
    this.address = `127.0.0.1:${port}`;
  }

  /** A server on a free port and `dbFile`. */
  static async onFreePort(dbFile: string): Promise<DevServer> {
    return new DevServer(dbFile, await freePort());
  }

  async start(): Promise<void> {
    const child = spawn(
      temporalCliPath(),
      [
        'server',
        'start-dev',
        ...['--db-filename', this.dbFile, '--port', String(this.port), '--ip', '127.0.0.1', '--headless'],
        ...['--log-level', 'error'],
        ...DEV_SERVER_EXTRA_ARGS,
        ...[EpisodeIdSearchAttribute, WeekIdSearchAttribute].flatMap((a) => [
          '--search-attribute',
          `${a.name}=Keyword`,
        ]),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    // The last 64 KiB only: a server that runs for an hour (the campaign's year) writes more than a string can hold.
    const keep = (d: Buffer) => (this.log = (this.log + d.toString()).slice(-LOG_TAIL_CHARS));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
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

/** A port free right now on 127.0.0.1 (bind, note, release). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
