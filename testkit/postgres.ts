/**
 * PostgreSQL for the tests. EPISODES_TEST_PG_URL points at an existing server; when it is unset, the first caller
 * starts a throwaway one (scripts/postgres-test-server.sh: loopback, free port, installs Debian's postgresql if
 * missing) and a root-level `after` hook stops it once the whole mocha run is over. Every store gets a fresh database.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { atEndOfEachFile, inParallelWorker } from './end-of-file';
import { REPO_ROOT } from './temporal';
import { sleep } from './wait';

const SCRIPT = path.join(REPO_ROOT, 'scripts', 'postgres-test-server.sh');
const STATE_ROOT = path.join(REPO_ROOT, '.pgtest');
const execFileAsync = promisify(execFile);

let server: Promise<string> | undefined;
/** PGTEST_DIR of the server this process started; undefined when using EPISODES_TEST_PG_URL or not started. */
let ownServerDir: string | undefined;
const createdDatabases: string[] = [];
let counter = 0;

/** URL of the test server (admin access: tests create databases on it). */
export function testPostgresUrl(): Promise<string> {
  server ??= startServer();
  return server;
}

async function startServer(): Promise<string> {
  const existing = process.env.EPISODES_TEST_PG_URL;
  if (existing) return existing;
  stopAbandonedServers();
  ownServerDir = path.join(STATE_ROOT, `mocha-${process.pid}`);
  // Generous: the first run on a fresh machine may install PostgreSQL with apt-get.
  const { stdout } = await execFileAsync('bash', [SCRIPT, 'start'], {
    env: { ...process.env, PGTEST_DIR: ownServerDir },
    timeout: 600_000,
  });
  return stdout.trim();
}

/** A new, empty database on the test server; its URL. */
export async function freshDatabase(prefix = 'test'): Promise<string> {
  const base = await testPostgresUrl();
  const name = `${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}_${counter++}`;
  await withDatabase(base, (c) => c.query(`CREATE DATABASE "${name}"`));
  createdDatabases.push(name);
  return databaseUrl(base, name);
}

export function databaseUrl(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

/** One connection to `url` for the body (tests inspect or damage a schema on purpose through it). */
export async function withDatabase<T>(url: string, body: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

/**
 * A throwaway server of its own for fault tests (scripts/postgres-test-server.sh on a separate PGTEST_DIR), so that
 * crashing, restarting or starving it never disturbs the shared test server. Stopped by `stop()` or at exit.
 */
export class PostgresFaultServer {
  private constructor(
    private readonly dir: string,
    /** Admin URL of the `episodes` database. */
    readonly url: string,
  ) {}

  /** `archiveDir`: WAL is archived there too, for `pitr` (scripts/postgres-test-server.sh). */
  static async start(name: string, options: { archiveDir?: string } = {}): Promise<PostgresFaultServer> {
    return PostgresFaultServer.create(
      name,
      ['start'],
      options.archiveDir ? { PGTEST_ARCHIVE_DIR: options.archiveDir } : {},
    );
  }

  /** A streaming (asynchronous) standby of `primary`, from a fresh base backup, on its own port. */
  static standbyOf(primary: PostgresFaultServer, name: string): Promise<PostgresFaultServer> {
    return PostgresFaultServer.create(name, ['standby'], { PGTEST_PRIMARY_DIR: primary.dir });
  }

  /**
   * A new server from the base backup in `backupDir`, its archived WAL (in `archiveDir`) replayed up to `lsn`, then
   * promoted: point-in-time recovery. `from` is the server the backup was taken of (its password is reused).
   */
  static async pitr(
    from: PostgresFaultServer,
    name: string,
    recovery: { backupDir: string; lsn: string; archiveDir: string },
  ): Promise<PostgresFaultServer> {
    const restored = await PostgresFaultServer.create(name, ['pitr', recovery.backupDir, recovery.lsn], {
      PGTEST_FROM_DIR: from.dir,
      PGTEST_ARCHIVE_DIR: recovery.archiveDir,
    });
    for (let i = 0; i < 600 && (await restored.sql('SELECT pg_is_in_recovery()')) !== 'f'; i++) await sleep(100);
    return restored;
  }

  private static async create(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<PostgresFaultServer> {
    const dir = path.join(STATE_ROOT, `faults-${process.pid}-${name}`);
    faultServerDirs.add(dir);
    const { stdout } = await execFileAsync('bash', [SCRIPT, ...args], {
      env: { ...process.env, ...env, PGTEST_DIR: dir },
      timeout: 600_000,
    });
    return new PostgresFaultServer(dir, stdout.trim().split('\n').at(-1)!);
  }

  /** Ends recovery: a standby becomes a primary that accepts writes. */
  async promote(): Promise<void> {
    await this.script('promote');
  }

  /** A base backup of the whole server into `dir` (which must not exist yet). */
  async baseBackup(dir: string): Promise<void> {
    await this.script('basebackup', dir);
  }

  /**
   * The WAL written up to now is in the archive (a server started with `archiveDir`), for `pitr` up to now. A
   * transaction's commit record goes first: an LSN read on a segment boundary (right after a base backup, nothing
   * written since) is reached only by a record in the next segment, and a switch away from an empty one is no switch.
   */
  async archiveNow(): Promise<void> {
    await this.sql('SELECT txid_current()');
    const segment = await this.sql('SELECT pg_walfile_name(pg_current_wal_lsn())');
    await this.sql('SELECT pg_switch_wal()');
    for (let i = 0; i < 600; i++) {
      const last = await this.sql("SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver");
      if (last >= segment) return;
      await sleep(100);
    }
    throw new Error(`WAL segment ${segment} was not archived within 60 s`);
  }

  private async script(...args: string[]): Promise<string> {
    const { stdout } = await execFileAsync('bash', [SCRIPT, ...args], {
      env: { ...process.env, PGTEST_DIR: this.dir },
      timeout: 120_000,
    });
    return stdout.trim();
  }

  /**
   * `pg_ctl -m immediate stop`: every backend dies at once, without a checkpoint; crash recovery replays the WAL on
   * `resume()`. Every confirmed commit survives (synchronous_commit = on), unless a test turned that off for its
   * database: then the commits still in WAL buffers are lost, as on a failover to an asynchronous replica.
   */
  crash(): Promise<string> {
    return this.script('crash');
  }

  /** `pg_ctl -m smart stop` without waiting: the server refuses new sessions (57P03) until the open ones end. */
  beginSmartShutdown(): Promise<string> {
    return this.script('shutdown-smart');
  }

  /** Starts the crashed or stopped server again on the same data and port (crash recovery first). */
  resume(): Promise<string> {
    return this.script('resume');
  }

  /** `ALTER SYSTEM SET name = value`, then a fast restart so that even restart-only settings apply. */
  async configure(settings: Record<string, string | number>): Promise<void> {
    for (const [name, value] of Object.entries(settings)) {
      await this.sql(`ALTER SYSTEM SET ${name} = '${String(value)}'`);
    }
    await this.script('restart');
  }

  /** One statement as the admin user, through psql; its rows as unaligned text. */
  sql(statement: string): Promise<string> {
    return this.script('sql', statement);
  }

  /** One statement on another database of this server. */
  sqlOn(database: string, statement: string): Promise<string> {
    return this.script('sql', statement, database);
  }

  /** A backup of `database` (pg_dump) in `file`. */
  async dump(database: string, file: string): Promise<void> {
    await this.script('dump', database, file);
  }

  /** `database` replaced by the backup in `file`: everything written since the dump is forgotten. */
  async restore(database: string, file: string): Promise<void> {
    await this.script('restore', database, file);
  }

  /** Ends every backend whose application_name starts with `prefix`; how many. */
  async terminateApplication(prefix: string): Promise<number> {
    const out = await this.sql(
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity ` +
        `WHERE application_name LIKE '${prefix.replace(/'/g, "''")}%' AND pid <> pg_backend_pid()`,
    );
    return Number(out);
  }

  /** Ends the backend holding advisory lock `lockId` (granted); its application_name, or undefined if none held it. */
  async terminateLockHolder(lockId: number): Promise<string | undefined> {
    const out = await this.sql(
      `SELECT a.application_name, pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a USING (pid) ` +
        `WHERE l.locktype = 'advisory' AND l.granted AND l.objid = ${lockId} AND l.objsubid = 1`,
    );
    return out ? out.split('|')[0] : undefined;
  }

  /** What must be zero on a quiet server: advisory locks held, sessions idle inside a transaction (ours excluded). */
  async leftovers(): Promise<{ advisoryLocks: number; idleInTransaction: number }> {
    const out = await this.sql(
      `SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'), ` +
        `(SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND pid <> pg_backend_pid())`,
    );
    const [advisoryLocks, idleInTransaction] = out.split('|').map(Number);
    return { advisoryLocks: advisoryLocks ?? NaN, idleInTransaction: idleInTransaction ?? NaN };
  }

  /** application_name of every client session (ours excluded). */
  async applications(): Promise<string[]> {
    const out = await this.sql(
      `SELECT application_name FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    return out ? out.split('\n') : [];
  }

  async stop(): Promise<void> {
    faultServerDirs.delete(this.dir);
    await this.script('stop');
  }
}
const faultServerDirs = new Set<string>();

export async function stopTestPostgres(): Promise<void> {
  if (!server) return;
  const base = await server.catch(() => undefined);
  server = undefined;
  if (ownServerDir) {
    const dir = ownServerDir;
    ownServerDir = undefined;
    await execFileAsync('bash', [SCRIPT, 'stop'], { env: { ...process.env, PGTEST_DIR: dir } });
  } else if (base) {
    // An existing server: leave it as we found it.
    await withDatabase(base, async (c) => {
      for (const name of createdDatabases.splice(0)) await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    });
  }
}

/** Servers of earlier mocha runs (or workers) that were killed before their `after` hook. */
export function stopAbandonedServers(): void {
  if (!existsSync(STATE_ROOT)) return;
  for (const name of readdirSync(STATE_ROOT)) {
    const pid = /^(?:mocha|faults)-(\d+)/.exec(name)?.[1];
    if (!pid || isAlive(Number(pid))) continue;
    execFileSync('bash', [SCRIPT, 'stop'], { env: { ...process.env, PGTEST_DIR: path.join(STATE_ROOT, name) } });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Loaded from spec files, so these are root hooks: they run once, before and after every test of the mocha run. The
// start is here, with its own long timeout, because on a fresh machine it installs PostgreSQL first. In a worker of
// `mocha --parallel`, which runs one file after another on this module loaded once, the server serves them all and
// stops when the worker exits; the run's global teardown (setup.ts) sweeps what a killed worker left behind.
if (typeof before === 'function' && typeof after === 'function') {
  before(async function () {
    this.timeout(600_000);
    await testPostgresUrl();
  });
  if (!inParallelWorker) {
    after(async function () {
      this.timeout(60_000);
      await stopTestPostgres();
    });
  }
}
// An existing server (EPISODES_TEST_PG_URL) is left as found after every file, as after a serial run.
if (inParallelWorker) {
  atEndOfEachFile(async () => {
    if (!ownServerDir) await stopTestPostgres();
  });
}
// Last resort (an uncaught error, Ctrl-C): never leave the server running.
process.on('exit', () => {
  for (const dir of faultServerDirs) {
    execFileSync('bash', [SCRIPT, 'stop'], { env: { ...process.env, PGTEST_DIR: dir }, stdio: 'ignore' });
  }
  if (ownServerDir) {
    execFileSync('bash', [SCRIPT, 'stop'], { env: { ...process.env, PGTEST_DIR: ownServerDir }, stdio: 'ignore' });
  }
});
