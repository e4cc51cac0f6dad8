/**
 * The error mapping, on errors captured from a real server: each failure is provoked on the throwaway PostgreSQL (a
 * terminated backend, a crashed server, a server shutting down, a full role, a statement timeout, a deadlock, ...),
 * the error node-postgres raised is kept, and `toStoreError` must give it the right type, retryability and reason,
 * with a message that names the store and never its password.
 */
import assert from 'node:assert/strict';
import { Client, DatabaseError } from 'pg';
import { PipelineError, ErrorType } from '../../../src/domain/errors';
import { storeErrorReason, toStoreError, type StoreErrorReason } from '../../../src/store/postgres-errors';
import { describePostgresUrl } from '../../../src/store/postgres-url';
import { PostgresFaultServer, databaseUrl, freshDatabase, withDatabase } from '../../../testkit/postgres';

/** Runs `provoke` and returns what it threw (it must throw). */
async function capture(provoke: () => Promise<unknown>): Promise<unknown> {
  try {
    await provoke();
  } catch (e) {
    return e;
  }
  assert.fail('the fault did not raise an error');
}

async function connected(url: string, applicationName = 'errors-test'): Promise<Client> {
  const c = new Client({ connectionString: url, application_name: applicationName });
  c.on('error', () => undefined); // a terminated idle client reports here; its next query reports properly
  await c.connect();
  return c;
}

async function pidOf(c: Client): Promise<number> {
  const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return rows[0]!.pid;
}

describe('postgres error mapping: real failures captured from the server', function () {
  this.timeout(120_000);
  let url: string;
  let password: string;
  let where: string;
  const captured = new Map<string, unknown>();

  before(async () => {
    url = await freshDatabase('errors');
    password = decodeURIComponent(new URL(url).password);
    where = `read episode on the postgres store at ${describePostgresUrl(url)}`;
  });

  function expectMapped(
    name: string,
    e: unknown,
    expected: { sqlstate?: string; reason: StoreErrorReason; type: ErrorType; retryable: boolean },
  ) {
    captured.set(name, e);
    if (expected.sqlstate !== undefined) {
      assert.ok(e instanceof DatabaseError, `${name}: a DatabaseError (got ${String(e)})`);
      assert.equal(e.code, expected.sqlstate, `${name}: SQLSTATE from the server`);
    }
    assert.equal(storeErrorReason(e), expected.reason, `${name}: reason`);
    const mapped = toStoreError(e, where);
    assert.ok(mapped instanceof PipelineError);
    assert.equal(mapped.type, expected.type, `${name}: type`);
    assert.equal(mapped.retryable, expected.retryable, `${name}: retryable`);
    assert.equal(mapped.details.reason, expected.reason);
    assert.ok(mapped.message.startsWith(where), `${name}: names the store: ${mapped.message}`);
    assert.ok(!mapped.message.includes(password), `${name}: no password in ${mapped.message}`);
    assert.ok(!JSON.stringify(mapped.details).includes(password), `${name}: no password in the details`);
  }

  it('57P01 (backend terminated mid-statement) and a terminated idle session: connection lost, retryable', async () => {
    await withDatabase(url, async (admin) => {
      const busy = await connected(url);
      const idle = await connected(url);
      const [busyPid, idlePid] = [await pidOf(busy), await pidOf(idle)];
      const running = capture(() => busy.query('SELECT pg_sleep(30)'));
      await new Promise((r) => setTimeout(r, 300));
      await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [[busyPid, idlePid]]);
      expectMapped('57P01', await running, {
        sqlstate: '57P01',
        reason: 'session-ended',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      await new Promise((r) => setTimeout(r, 200));
      expectMapped('idle session terminated', await capture(() => idle.query('SELECT 1')), {
        reason: 'connection-lost',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      await Promise.allSettled([busy.end(), idle.end()]);
    });
  });

  it('57014 statement_timeout and 55P03 lock_timeout: retryable StorageFailure and LockTimeout', async () => {
    const a = await connected(url);
    const b = await connected(url);
    try {
      await a.query('SET statement_timeout = 100');
      expectMapped('57014', await capture(() => a.query('SELECT pg_sleep(5)')), {
        sqlstate: '57014',
        reason: 'statement-timeout',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      await a.query('RESET statement_timeout');
      await b.query('BEGIN');
      await b.query('SELECT pg_advisory_xact_lock(4242)');
      await a.query('BEGIN');
      await a.query(`SET LOCAL lock_timeout = '100ms'`);
      expectMapped('55P03', await capture(() => a.query('SELECT pg_advisory_xact_lock(4242)')), {
        sqlstate: '55P03',
        reason: 'lock-timeout',
        type: ErrorType.LockTimeout,
        retryable: true,
      });
      await a.query('ROLLBACK');
      await b.query('ROLLBACK');
    } finally {
      await Promise.allSettled([a.end(), b.end()]);
    }
  });

  it('40001 serialization failure and 40P01 deadlock: retryable', async () => {
    const a = await connected(url);
    const b = await connected(url);
    try {
      await a.query('CREATE TABLE IF NOT EXISTS skew (id int PRIMARY KEY, on_call boolean NOT NULL)');
      await a.query('INSERT INTO skew VALUES (1, true), (2, true) ON CONFLICT DO NOTHING');
      // Write skew: each reads both rows, then turns off the other's; SERIALIZABLE refuses the second commit.
      for (const c of [a, b]) await c.query('BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT count(*) FROM skew');
      await a.query('UPDATE skew SET on_call = false WHERE id = 1');
      await b.query('UPDATE skew SET on_call = false WHERE id = 2');
      await a.query('COMMIT');
      expectMapped('40001', await capture(() => b.query('COMMIT')), {
        sqlstate: '40001',
        reason: 'serialization',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      // Deadlock: each holds one advisory lock and waits for the other's.
      for (const c of [a, b]) await c.query(`BEGIN; SET LOCAL deadlock_timeout = '100ms'`);
      await a.query('SELECT pg_advisory_xact_lock(1)');
      await b.query('SELECT pg_advisory_xact_lock(2)');
      const results = await Promise.allSettled([
        a.query('SELECT pg_advisory_xact_lock(2)'),
        b.query('SELECT pg_advisory_xact_lock(1)'),
      ]);
      const loser = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expectMapped('40P01', loser?.reason, {
        sqlstate: '40P01',
        reason: 'deadlock',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      for (const c of [a, b]) await c.query('ROLLBACK');
    } finally {
      await Promise.allSettled([a.end(), b.end()]);
    }
  });

  it('23505 is a concurrent writer (retryable LockCompromised); 23514 and 42P01 are StoreCorrupt, not retried', async () => {
    const a = await connected(url);
    try {
      await a.query('CREATE TABLE IF NOT EXISTS uniq (id int PRIMARY KEY, n int CHECK (n >= 0))');
      await a.query('INSERT INTO uniq VALUES (1, 1) ON CONFLICT DO NOTHING');
      expectMapped('23505', await capture(() => a.query('INSERT INTO uniq VALUES (1, 1)')), {
        sqlstate: '23505',
        reason: 'concurrent-writer',
        type: ErrorType.LockCompromised,
        retryable: true,
      });
      expectMapped('23514', await capture(() => a.query('INSERT INTO uniq VALUES (2, -1)')), {
        sqlstate: '23514',
        reason: 'constraint',
        type: ErrorType.StoreCorrupt,
        retryable: false,
      });
      expectMapped('42P01', await capture(() => a.query('SELECT * FROM no_such_table')), {
        sqlstate: '42P01',
        reason: 'schema-mismatch',
        type: ErrorType.StoreCorrupt,
        retryable: false,
      });
    } finally {
      await a.end();
    }
  });

  it('53300 too many connections: retryable; 28P01 wrong password: not retried, and the password is not shown', async () => {
    const role = `limited_${process.pid}`;
    const secret = `pw-${process.pid}-secret`;
    await withDatabase(url, (admin) =>
      admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${secret}' CONNECTION LIMIT 1`),
    );
    const limited = new URL(url);
    limited.username = role;
    limited.password = secret;
    const first = await connected(limited.toString());
    try {
      const e = await capture(() => connected(limited.toString()));
      expectMapped('53300', e, {
        sqlstate: '53300',
        reason: 'too-many-connections',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      assert.ok(!toStoreError(e, where).message.includes(secret));
    } finally {
      await first.end();
    }
    limited.password = 'wrong-password';
    expectMapped('28P01', await capture(() => connected(limited.toString())), {
      sqlstate: '28P01',
      reason: 'access-denied',
      type: ErrorType.InvalidState,
      retryable: false,
    });
  });

  describe('on a server of its own', () => {
    let server: PostgresFaultServer;
    before(async function () {
      this.timeout(600_000);
      server = await PostgresFaultServer.start('errors');
    });
    after(async () => server?.stop());

    it('57P02 (another backend crashed), 57P03 (shutting down), ECONNREFUSED (down): all retryable', async () => {
      const db = databaseUrl(server.url, 'episodes');
      // A backend killed by SIGKILL makes the postmaster end every other session with 57P02, then recover.
      const victim = await connected(db);
      const bystander = await connected(db);
      const victimPid = await pidOf(victim);
      const notices: (string | undefined)[] = [];
      bystander.on('notice', (n) => notices.push(n.code));
      const waiting = capture(() => bystander.query('SELECT pg_sleep(30)'));
      await new Promise((r) => setTimeout(r, 300));
      process.kill(victimPid, 'SIGKILL');
      // Since PostgreSQL 14 the server says 57P02 as a WARNING and then drops the session: what the store sees is the
      // connection lost mid-statement.
      expectMapped('57P02 (session dropped)', await waiting, {
        reason: 'connection-lost',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      assert.deepEqual(notices, ['57P02'], 'the server announced the crash shutdown (57P02)');
      // Older servers raise it as the statement's error: the same reason as any other session the server ends.
      const asError = Object.assign(new DatabaseError('terminating connection because of crash', 0, 'error'), {
        code: '57P02',
      });
      expectMapped('57P02 as an error', asError, {
        sqlstate: '57P02',
        reason: 'session-ended',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      await Promise.allSettled([victim.end(), bystander.end()]);
      // A smart shutdown waits for open sessions and refuses new ones with 57P03.
      let holder: Client | undefined;
      for (let i = 0; i < 50 && !holder; i++) holder = await connected(db).catch(() => undefined);
      assert.ok(holder, 'the server recovered from the crash');
      await server.beginSmartShutdown();
      let refused: unknown;
      for (let i = 0; i < 50 && !(refused instanceof DatabaseError); i++) {
        refused = await capture(() => connected(db));
        await new Promise((r) => setTimeout(r, 100));
      }
      expectMapped('57P03', refused, {
        sqlstate: '57P03',
        reason: 'session-ended',
        type: ErrorType.StorageFailure,
        retryable: true,
      });
      await holder.end();
      let down: unknown;
      for (let i = 0; i < 100 && (down as NodeJS.ErrnoException | undefined)?.code !== 'ECONNREFUSED'; i++) {
        down = await capture(() => connected(db));
        await new Promise((r) => setTimeout(r, 100));
      }
      expectMapped('ECONNREFUSED', down, { reason: 'unreachable', type: ErrorType.StorageFailure, retryable: true });
      await server.resume();
    });
  });
});
