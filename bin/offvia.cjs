#!/usr/bin/env node
// The `offvia` operator command (shared/ops/main.ts). Runs the TypeScript source through tsx, like the other tools
// of this repository, so it never runs a stale build; where tsx is not installed (a production install without dev
// dependencies) it runs the compiled build (`npm run build`).
'use strict';
/* global require, __dirname */
const path = require('node:path');

let tsx = true;
try {
  require.resolve('tsx/cjs');
} catch {
  tsx = false;
}
if (tsx) {
  require('tsx/cjs');
  require(path.join(__dirname, '..', 'shared', 'ops', 'main.ts'));
} else {
  require(path.join(__dirname, '..', 'build', 'shared', 'ops', 'main.js'));
}
