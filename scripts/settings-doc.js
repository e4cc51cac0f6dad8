#!/usr/bin/env node
// `npm run docs:settings`: writes the settings table (src/settings/table.ts) into docs/configuration.md, between its
// markers. test/unit/settings/settings.test.ts fails when the doc is behind the table.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { withSettingsTable } = require('../dist/src/settings/reference');

const doc = path.resolve(__dirname, '..', 'docs', 'configuration.md');
fs.writeFileSync(doc, withSettingsTable(fs.readFileSync(doc, 'utf8')));
