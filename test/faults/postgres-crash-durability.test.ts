/**
 * The fault server's crash is a crash, not a store that forgets: N commits PostgreSQL confirmed, then at once
 * `pg_ctl -m immediate` (every backend killed, no checkpoint), then crash recovery: all N are there. With
 * `synchronous_commit = off` (what scripts/postgres-test-server.sh used to set) an immediate crash drops the commits
 * still in WAL buffers; the "store forgets" rows (store-forgets.test.ts) use that on purpose, this test must not.
 */
import assert from 'node:assert/strict';
import { Client } from 'pg';
import { PostgresFaultServer, databaseUrl } from '../../testkit/postgres';

const CONFIRMED_WRITES = 200;

describe('PostgreSQL fault server: confirmed commits survive an immediate crash', function () {
  this.timeout(10 * 60_000);
  let server: PostgresFaultServer;

  before(async () => {
    server = await PostgresFaultServer.start('crash-durability');
  });
  after(async () => {
    await server?.stop();
  });

  it(`${CONFIRMED_WRITES} confirmed single-row commits, crash at once, recovery: all ${CONFIRMED_WRITES} there`, async () => {
    assert.equal(await server.sql('SHOW synchronous_commit'), 'on', 'the server confirms a commit only once written');
    await server.sql('CREATE DATABASE durability');
    const client = new Client({ connectionString: databaseUrl(server.url, 'durability') });
    await client.connect();
    client.on('error', () => undefined); // the crash ends the session
    try {
      await client.query('CREATE TABLE confirmed (n int PRIMARY KEY)');
      // One transaction per row, each awaited: every row below is a commit the server confirmed.
      for (let n = 0; n < CONFIRMED_WRITES; n++) await client.query('INSERT INTO confirmed VALUES ($1)', [n]);
      await server.crash();
    } finally {
      await client.end().catch(() => undefined);
    }
    await server.resume();
    assert.equal(Number(await server.sqlOn('durability', 'SELECT count(*) FROM confirmed')), CONFIRMED_WRITES);
  });
});
