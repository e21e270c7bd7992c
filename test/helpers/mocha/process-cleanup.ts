// Mocha root hooks (loaded by .mocharc.json): a process a test started and
// left running (a failed assertion before its stop, a timeout) is stopped
// when that test ends, and whatever else is still running when the run ends.
// Processes started in a before() hook belong to their suite, whose after()
// stops them.
import { setScopeOfNewProcesses, stopAll } from '../process';

export const mochaHooks = {
  beforeEach(): void {
    setScopeOfNewProcesses('test');
  },
  async afterEach(): Promise<void> {
    setScopeOfNewProcesses('run');
    await stopAll('test');
  },
  async afterAll(): Promise<void> {
    await stopAll();
  },
};
