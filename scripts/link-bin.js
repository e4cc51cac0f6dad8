#!/usr/bin/env node
// npm links the bins of dependencies, never the project's own: link `episodes` into node_modules/.bin so that
// `npx episodes` works right after `npm install` (run by the `prepare` script, after the build).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const target = path.join(root, 'dist', 'src', 'cli.js');
const binDir = path.join(root, 'node_modules', '.bin');
const link = path.join(binDir, 'episodes');

fs.chmodSync(target, 0o755);
fs.mkdirSync(binDir, { recursive: true });
fs.rmSync(link, { force: true });
fs.symlinkSync(path.relative(binDir, target), link);
