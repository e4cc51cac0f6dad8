/**
 * The store the campaign's workers write to, and the faults that only a store has: the file store in a data dir, or
 * PostgreSQL as a primary with a streaming (asynchronous) standby and a WAL archive for point-in-time recovery. The
 * servers are the tests' (testkit/postgres.ts over scripts/postgres-test-server.sh).
 */
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PostgresFaultServer } from '../testkit/postgres';
import { targetEnv, type StoreTarget } from '../testkit/reliability';
import { FileLockReader, PostgresLockReader, type LockReader } from './locks';
import type { StoreKind } from './plan';

export interface StoreHost {
  readonly kind: StoreKind;
  /**
   * A backup of the store now, for `restore`, named `name`; where it is (the campaign's `out` for the file store;
   * PostgreSQL's base backups go where the server's OS user can write, whatever `out` is).
   */
  backup(name: string): Promise<Backup>;
  /** The store as the backup left it; the caller has stopped the workers. */
  restore(backup: Backup): Promise<void>;
  /** Who holds the store's locks now (campaign/locks.ts). */
  locks(): LockReader;
  /** Where workers and the CLI find the store now (PostgreSQL: the current primary). */
  target(): StoreTarget;
  env(): NodeJS.ProcessEnv;
  /** The store's contents kept in `out` for a reader of a failed run (the file store's data dir is there already). */
  keep(out: string): Promise<void>;
  stop(): Promise<void>;
}

/** Where a backup is, and (PostgreSQL) the LSN a point-in-time recovery goes back to. */
export interface Backup {
  dir: string;
  lsn?: string;
}

export class FileStoreHost implements StoreHost {
  readonly kind = 'file';
  constructor(
    readonly dataDir: string,
    private readonly backupsDir: string,
  ) {}

  static async start(dir: string, backupsDir: string): Promise<FileStoreHost> {
    await fs.mkdir(dir, { recursive: true });
    return new FileStoreHost(dir, backupsDir);
  }

  target(): StoreTarget {
    return { kind: 'file', dataDir: this.dataDir };
  }

  locks(): LockReader {
    return new FileLockReader(() => this.dataDir);
  }

  env(): NodeJS.ProcessEnv {
    return targetEnv(this.target());
  }

  /**
   * A copy of the data dir taken while workers run (what an operator's nightly copy is), without the lock
   * directories, which come and go while it copies. A file renamed away mid-copy (a write's temp file): copy again.
   */
  async backup(name: string): Promise<Backup> {
    const dir = path.join(this.backupsDir, name);
    await fs.mkdir(this.backupsDir, { recursive: true });
    for (let attempt = 1; ; attempt++) {
      await fs.rm(dir, { recursive: true, force: true });
      try {
        await fs.cp(this.dataDir, dir, { recursive: true, filter: notALock });
        return { dir };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 5) throw e;
      }
    }
  }

  /** The copy put back, without lock directories; the caller has stopped the workers. */
  async restore({ dir }: Backup): Promise<void> {
    await fs.rm(this.dataDir, { recursive: true, force: true });
    await fs.cp(dir, this.dataDir, { recursive: true, filter: notALock });
  }

  async keep(): Promise<void> {}

  async stop(): Promise<void> {}
}

/** A path that is not one of the file store's lock directories (`episode.lock`, `pipeline.lock`, `*.lock.reclaim`). */
function notALock(src: string): boolean {
  return !/\.lock(\.reclaim)?$/.test(path.basename(src));
}

export class PostgresStoreHost implements StoreHost {
  readonly kind = 'postgres';
  private generation = 0;

  private constructor(
    private primary: PostgresFaultServer,
    private standby: PostgresFaultServer | undefined,
    private readonly archiveDir: string,
    private readonly backupsDir: string,
    private readonly mediaDir: string,
    private readonly name: string,
  ) {}

  /**
   * The WAL archive and the base backups are the server's OS user's to write (scripts/postgres-test-server.sh hands
   * the archive, and a base backup's parent, to it), so neither lives under the campaign's `out`, which may be a
   * private (0700) folder: each is a folder of its own in the system's temp dir, removed at `stop`. The media dir
   * stays in `out`: the workers' own.
   */
  static async start(dir: string, name: string): Promise<PostgresStoreHost> {
    const archiveDir = path.join(os.tmpdir(), `episodes-campaign-archive-${process.pid}`);
    await fs.rm(archiveDir, { recursive: true, force: true });
    const backupsDir = mkdtempSync(path.join(os.tmpdir(), 'episodes-campaign-backups-'));
    const primary = await PostgresFaultServer.start(`${name}-p0`, { archiveDir });
    const standby = await PostgresFaultServer.standbyOf(primary, `${name}-s0`);
    await fs.mkdir(path.join(dir, 'media'), { recursive: true });
    return new PostgresStoreHost(primary, standby, archiveDir, backupsDir, path.join(dir, 'media'), name);
  }

  target(): StoreTarget {
    return { kind: 'postgres', url: this.primary.url, mediaDir: this.mediaDir };
  }

  locks(): LockReader {
    return new PostgresLockReader(() => this.primary.url);
  }

  env(): NodeJS.ProcessEnv {
    return targetEnv(this.target());
  }

  /** `pg_ctl -m immediate` and start again on the same data: crash recovery, nothing confirmed is lost. */
  async restartImmediate(): Promise<void> {
    await this.primary.crash();
    await this.primary.resume();
  }

  /** pg_terminate_backend on every worker session; how many. */
  terminateWorkers(): Promise<number> {
    return this.primary.terminateApplication('episodes-worker-');
  }

  /** Replication cut: the standby stops receiving WAL (it keeps what it has, and keeps serving reads). */
  async cutReplication(): Promise<string> {
    const standby = this.requireStandby();
    await standby.sql(`ALTER SYSTEM SET primary_conninfo = ''`);
    await standby.sql('SELECT pg_reload_conf()');
    return standby.sql('SELECT pg_last_wal_replay_lsn()');
  }

  /**
   * The primary dies, the standby (cut earlier) is promoted and becomes the primary: the commits it never received
   * are lost. A new standby is built from it. Returns the WAL bytes the failover lost.
   */
  async failover(): Promise<number> {
    const standby = this.requireStandby();
    const lost = Number(
      await this.primary.sql(
        `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '${await standby.sql('SELECT pg_last_wal_replay_lsn()')}')`,
      ),
    );
    await this.primary.stop();
    await standby.promote();
    this.primary = standby;
    this.standby = await PostgresFaultServer.standbyOf(this.primary, `${this.name}-s${++this.generation}`);
    return lost;
  }

  /** A base backup now (in the backups folder, which pg_basebackup hands to the server's user), and the LSN after it. */
  async backup(name: string): Promise<Backup> {
    const dir = path.join(this.backupsDir, name);
    await this.primary.baseBackup(dir);
    return { dir, lsn: await this.primary.sql('SELECT pg_current_wal_lsn()') };
  }

  /**
   * Point-in-time recovery to `lsn` from the base backup in `dir`: the WAL is archived up to now, the primary and the
   * standby stop, a new server replays the backup's WAL to `lsn` and is promoted; a new standby follows it. The caller
   * has stopped the workers.
   */
  async restore({ dir, lsn }: Backup): Promise<void> {
    if (lsn === undefined) throw new Error(`the backup in ${dir} has no LSN to recover to`);
    await this.primary.archiveNow();
    const from = this.primary;
    const restored = await PostgresFaultServer.pitr(from, `${this.name}-r${++this.generation}`, {
      backupDir: dir,
      lsn,
      archiveDir: this.archiveDir,
    });
    await Promise.all([from.stop(), this.standby?.stop()]);
    this.primary = restored;
    this.standby = await PostgresFaultServer.standbyOf(this.primary, `${this.name}-s${this.generation}`);
  }

  /** `store.dump`: pg_dump's custom format of the episodes database (`pg_restore -f - store.dump` reads it). */
  async keep(out: string): Promise<void> {
    await this.primary.dump('episodes', path.join(out, 'store.dump'));
  }

  async stop(): Promise<void> {
    await Promise.all([this.primary.stop(), this.standby?.stop()]);
    await fs.rm(this.archiveDir, { recursive: true, force: true });
    await fs.rm(this.backupsDir, { recursive: true, force: true });
  }

  private requireStandby(): PostgresFaultServer {
    if (!this.standby) throw new Error('no standby');
    return this.standby;
  }
}
