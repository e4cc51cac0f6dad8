/**
 * Who holds a store lock now, from facts anyone on the machine can check (not from the workers' word, nor a timer):
 *  - the file store: a lock is a directory (`<data>/pipeline.lock/`, `<data>/episodes/<id>/episode.lock/`) holding
 *    its holder's entry `holder-<pid>-<start time>-…` (src/store/holder-identity.ts);
 *  - PostgreSQL: the pipeline lock is the advisory lock PIPELINE_LOCK_ID, granted to a session whose
 *    application_name is `episodes-worker-<host>-<pid>` (every allocation and every episode update takes it).
 * The worker-freeze fault freezes a worker it sees holding one, and counts a hit only if the lock is still its once the
 * process is stopped.
 */
import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { PIPELINE_LOCK_ID } from '../src/store/postgres-store';

export interface HeldLock {
  /** `pipeline`, or `episode <id>`. */
  lock: string;
  pid: number;
}

export interface LockReader {
  /** The locks held now, each with its holder's pid. */
  held(): Promise<HeldLock[]>;
  /** Whether the holder is at an allocation's commit point, its week index staged (file store only). */
  stagedCommit?(h: HeldLock): boolean;
  close(): Promise<void>;
}

/** The pid a holder entry names, or undefined for anything else in a lock directory. */
export function holderPid(entry: string): number | undefined {
  const m = /^holder-(\d+)-/.exec(entry);
  return m ? Number(m[1]) : undefined;
}

/** The pid an `episodes-worker-<host>-<pid>` application name names. */
export function workerSessionPid(applicationName: string): number | undefined {
  const m = /^episodes-worker-.*-(\d+)$/.exec(applicationName);
  return m ? Number(m[1]) : undefined;
}

export class FileLockReader implements LockReader {
  constructor(private readonly dataDir: () => string) {}

  held(): Promise<HeldLock[]> {
    const data = this.dataDir();
    const found: HeldLock[] = [];
    const look = (lock: string, dir: string) => {
      for (const entry of entries(dir)) {
        const pid = holderPid(entry);
        if (pid !== undefined) found.push({ lock, pid });
      }
    };
    look('pipeline', path.join(data, 'pipeline.lock'));
    for (const id of entries(path.join(data, 'episodes'))) {
      look(`episode ${id}`, path.join(data, 'episodes', id, 'episode.lock'));
    }
    return Promise.resolve(found);
  }

  /**
   * Whether the holder is at an allocation's commit point: its key file committed, its week index staged and not yet
   * renamed into place. Seen from its temp files (`<name>.<pid>-<random>.tmp`, durable-fs.ts stageFile) in its fence
   * (`<lock>/<holder entry>/c-<nonce>/`, lock-fence.ts), or beside the data dir where the test-only no-fence store
   * stages them (testkit/unsafe-stores.ts).
   */
  stagedCommit(h: HeldLock): boolean {
    const data = this.dataDir();
    const lockDir =
      h.lock === 'pipeline'
        ? path.join(data, 'pipeline.lock')
        : path.join(data, 'episodes', h.lock.slice('episode '.length), 'episode.lock');
    const fences = entries(lockDir)
      .filter((e) => holderPid(e) === h.pid)
      .flatMap((e) => entries(path.join(lockDir, e)).map((c) => path.join(lockDir, e, c)));
    const temps = [...fences, `${data}.unsafe-staging`]
      .flatMap((dir) => entries(dir))
      .filter((n) => n.endsWith('.tmp') && n.includes(`.${h.pid}-`));
    const week = temps.some((n) => /\d{4}-W\d{2}\.json\.\d+-\w+\.tmp$/.test(n));
    const key = temps.some((n) => /[0-9a-f]{64}\.json\.\d+-\w+\.tmp$/.test(n));
    return week && !key;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return []; // no such lock (or episode) now
  }
}

/** pg_locks on the current primary, through one admin connection (reopened after a restart or a failover). */
export class PostgresLockReader implements LockReader {
  private client: Client | undefined;
  private connectedTo = '';

  constructor(private readonly url: () => string) {}

  async held(): Promise<HeldLock[]> {
    const url = this.url();
    try {
      if (!this.client || this.connectedTo !== url) {
        await this.close();
        const client = new Client({ connectionString: url, application_name: 'episodes-campaign-locks' });
        client.on('error', () => undefined); // a restart ends the session: reopened at the next look
        await client.connect();
        this.client = client;
        this.connectedTo = url;
      }
      // A bigint advisory key shows as classid (high 32 bits) and objid (low 32 bits), objsubid 1.
      const { rows } = await this.client.query<{ application_name: string }>(
        `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1`,
        [PIPELINE_LOCK_ID],
      );
      return rows.flatMap((r) => {
        const pid = workerSessionPid(r.application_name);
        return pid === undefined ? [] : [{ lock: 'pipeline', pid }];
      });
    } catch {
      await this.close();
      return []; // the server restarts or fails over: nothing seen this time
    }
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}
