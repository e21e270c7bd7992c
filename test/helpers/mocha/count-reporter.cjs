// Mocha's spec output, plus the counts written to a file that .ci/run turns
// into its final "N passed, N failed" line (CI does not read mocha's summary).
const fs = require('node:fs');
const Mocha = require('mocha');

class CountReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once('end', () => {
      const file = process.env.TEST_COUNTS_FILE;
      if (!file) return;
      const { passes = 0, failures = 0, pending = 0 } = runner.stats || {};
      fs.appendFileSync(file, JSON.stringify({ suite: process.env.TEST_SUITE_NAME || 'mocha', passed: passes, failed: failures, pending }) + '\n');
    });
  }
}

module.exports = CountReporter;
