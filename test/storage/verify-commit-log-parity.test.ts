import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { COMMIT_LOG_FILE } from '../../src/storage/commit-log-replay.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { runVerify } from '../helpers/cli.js';
import { crashImage } from '../helpers/crash-image.js';

/**
 * `harness verify` judges commit.log records as the bridge's startup replay does: a logged record
 * that contradicts the journal at its position quarantines the run at the next start, so verify
 * reports it TAMPERED now instead of "ok".
 */

t.test(
  'a logged record that differs from the journal is tampering to verify and to the bridge',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    for (const id of ['d', 'd', 'e']) t.equal((await b.req('POST', `/runs/${id}/events`, ev())).status, 201);
    const crashed = await crashImage(t, b);
    const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
    const lines = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
    const first = lines.find((l) => l.startsWith('d '));
    if (!first) throw new Error('no record of d in the log');
    // Record 0 of d, its MAC's last hex digit changed; the journal's record 0 is intact.
    const forged = first.replace(/"mac":"([0-9a-f]{63})([0-9a-f])"/, (_, head: string, last: string) => {
      return `"mac":"${head}${last === '0' ? '1' : '0'}"`;
    });
    t.not(forged, first);
    await writeFile(logPath, `${forged}\n${lines.filter((l) => l.startsWith('e ')).join('\n')}\n`);

    const verified = await runVerify(crashed.env);
    t.equal(verified.code, 1, 'verify fails');
    t.match(verified.stdout, /TAMPERED d: commit\.log record 0 differs from the journal's/);
    t.match(verified.stdout, /^ok e /m, 'the other run is fine');

    const started = await startTestBridge(crashed);
    t.teardown(() => started.close());
    const d = (await started.req('GET', '/runs/d')).body.run;
    t.equal(d.status, 'quarantined', 'the bridge agrees');
    t.match(d.quarantine.reasons, ["commit.log record 0 differs from the journal's"]);
    t.equal((await started.req('GET', '/runs/e')).body.run.status, 'running');
  },
);
