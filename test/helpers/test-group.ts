import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';

/**
 * Runs every test file of one directory in this one process, in name order. tap starts a process
 * for each file it finds (`dist/test/*.test.js`), and each start costs about a second of CPU
 * (tap's process tracker and module hooks; docs/performance.md). So the test files that take a
 * second or two and leave nothing running live in a directory (test/storage, test/server, ...),
 * and one `<directory>.test.ts` beside it runs them all through this. Each is still a tap file of
 * its own: `npx tap dist/test/storage/mac.test.js` runs just it.
 *
 * The files load inside one first subtest, so their own tests queue behind it and run once all
 * have loaded. Loading them one by one between tests would let tap end the process's root test
 * while the next file loads: once any file has a root-level `t.teardown`, tap ends the root as soon
 * as it is idle for two timer turns, and the files after that one would never run.
 *
 * A directory of test files without its runner would never run, so each runner first checks that
 * every directory beside it (but helpers) has one.
 */
export function runGroup(runner: string, group = basename(runner, '.test.js')): void {
  const root = dirname(runner);
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name !== 'helpers' && !existsSync(join(root, `${entry.name}.test.js`))) {
      throw new Error(`test/${entry.name}/ has no runner test/${entry.name}.test.ts, so tap never runs it`);
    }
  }
  const dir = join(root, group);
  const files = readdirSync(dir, { withFileTypes: true });
  const nested = files.find((f) => f.isDirectory());
  if (nested) throw new Error(`${dir}/${nested.name}: a test group holds files only`);
  const tests = files.map((f) => f.name).filter((n) => n.endsWith('.test.js'));
  if (tests.length === 0) throw new Error(`${dir} holds no test files`);
  t.test(`the ${tests.length} test files of test/${group}/ load`, async (t) => {
    for (const name of tests.sort()) {
      try {
        await import(pathToFileURL(join(dir, name)).href);
        t.pass(`${name} loads`);
      } catch (error) {
        t.fail(`${name} does not load`, { error });
      }
    }
  });
}
