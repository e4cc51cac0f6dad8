// Every generator of doc tables, one line each: test/docs/doc-tables.test.ts checks each against its markers, and
// `scripts/run-tests.mjs --write-docs` hands a test run's rows to those with `fromParts` (docs/testing.md).
export { benchDocTables } from '../../bench/doc-tables';
export { campaignDocTables } from '../../campaign/docs';
export { faultDocTables } from '../reliability/doc-tables';
