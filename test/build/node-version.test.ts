import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';

/**
 * scripts/test-node.sh runs this suite under each supported Node major with that Node first on
 * PATH, and names the version in HARNESS_TEST_NODE_VERSION. tap starts its test processes with
 * the Node it runs on, and the tests start bridges and CLI runs with `process.execPath`; a run
 * that silently stayed on the machine's Node would prove nothing about the others. Both the test
 * process and a `node` found on PATH must be the version asked for. Without the variable (a plain
 * `npm test`) it only names the version.
 */
const expected = process.env['HARNESS_TEST_NODE_VERSION'];

t.test('the test processes run on the Node the runner asked for', async (t) => {
  const { stdout } = await promisify(execFile)('node', ['--version']);
  t.comment(`test process: node ${process.version}; node on PATH: ${stdout.trim()}`);
  if (expected === undefined) return;
  t.equal(process.version, expected, 'the test process');
  t.equal(stdout.trim(), expected, 'node --version on PATH, as a test process sees it');
});
