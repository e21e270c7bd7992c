#!/usr/bin/env node
// The `h3-demo-server` bin and `node dist/cli.js`: the demo's command line (src/demo/cli.ts).
import { runCli } from './demo/cli';

runCli(process.argv);
