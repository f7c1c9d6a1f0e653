import t from 'tap';
import { readBridgeEnv } from '../../src/server/env.js';
import { loggerOptions } from '../../src/server/logging.js';
import { StartupError } from '../../src/storage/lease.js';
import { databaseUrlSecrets, redactDatabaseUrl } from '../../src/storage/pg/url.js';

/**
 * Issue 32 items 1 and 7: HARNESS_DATABASE_URL and HARNESS_DB_POOL as startup reads them, and the
 * URL's password, which no refusal, message or log line may show.
 */
const bare = {
  HARNESS_BRIDGE_INTEGRITY_KEY: 'k'.repeat(32),
  HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(32),
  HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(32),
  HARNESS_REVIEW_TRUST_SHA256: 'ab'.repeat(32),
};
const PASSWORD = 'Sw0rdfish-never-shown';

function refusal(env: Record<string, string>): Error {
  try {
    readBridgeEnv({ ...bare, ...env });
  } catch (err) {
    return err as Error;
  }
  throw new Error('readBridgeEnv accepted it');
}

t.test('without HARNESS_DATABASE_URL the file store is kept; the pool defaults to 4', async (t) => {
  t.match(readBridgeEnv(bare), { databaseUrl: null, dbPoolSize: 4 });
  t.match(readBridgeEnv({ ...bare, HARNESS_DATABASE_URL: '', HARNESS_DB_POOL: '' }), {
    databaseUrl: null,
    dbPoolSize: 4,
  });
});

t.test('a postgres:// or postgresql:// URL is taken as given, a socket directory too', async (t) => {
  for (const url of [
    `postgres://bridge:${PASSWORD}@db.example:5432/runs`,
    `postgresql://bridge:${PASSWORD}@/runs?host=%2Fvar%2Frun%2Fpostgresql`,
    'POSTGRES://bridge@localhost/runs',
    'postgresql:///runs?host=/tmp/socket-dir',
  ]) {
    t.equal(
      readBridgeEnv({ ...bare, HARNESS_DATABASE_URL: url }).databaseUrl,
      url,
      url.replace(PASSWORD, '***'),
    );
  }
});

t.test('any other URL is refused in one line that never shows it', async (t) => {
  for (const url of [
    `mysql://bridge:${PASSWORD}@db.example/runs`,
    `http://bridge:${PASSWORD}@db.example/runs`,
    PASSWORD,
    `postgres://bridge:${PASSWORD}@[db.example/runs`,
    `postgres://bridge:${PASSWORD}@db.example:port/runs`,
  ]) {
    const err = refusal({ HARNESS_DATABASE_URL: url });
    t.ok(err instanceof StartupError, `refused: ${err.message}`);
    t.match(err.message, /^HARNESS_DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/);
    t.notOk(err.message.includes(PASSWORD), 'the password is not in the message');
    t.notOk(err.message.includes('db.example'), 'nor any part of the URL');
    t.notOk(err.message.includes('\n'), 'one line');
  }
});

t.test('HARNESS_DB_POOL is an integer from 1 to 64', async (t) => {
  t.equal(readBridgeEnv({ ...bare, HARNESS_DB_POOL: '1' }).dbPoolSize, 1);
  t.equal(readBridgeEnv({ ...bare, HARNESS_DB_POOL: '64' }).dbPoolSize, 64);
  for (const pool of ['0', '65', '-1', '4.5', 'four', ' 4']) {
    const err = refusal({ HARNESS_DB_POOL: pool });
    t.ok(err instanceof StartupError, `${JSON.stringify(pool)} refused`);
    t.equal(err.message, 'HARNESS_DB_POOL must be an integer from 1 to 64');
  }
});

t.test('redactDatabaseUrl shows everything but the password', async (t) => {
  const cases: [string, string][] = [
    [`postgres://bridge:${PASSWORD}@db.example:5432/runs`, 'postgres://bridge:***@db.example:5432/runs'],
    [`postgresql://bridge:${PASSWORD}@/runs?host=/tmp/s`, 'postgresql://bridge:***@/runs?host=/tmp/s'],
    // An unencoded @ in the password: the last @ of the authority ends it, as node-postgres reads it.
    ['postgres://bridge:p@ss@db.example/runs', 'postgres://bridge:***@db.example/runs'],
    [
      `postgres://bridge@db.example/runs?password=${PASSWORD}&sslpassword=${PASSWORD}&sslmode=require`,
      'postgres://bridge@db.example/runs?password=***&sslpassword=***&sslmode=require',
    ],
    ['postgres://bridge@db.example/runs', 'postgres://bridge@db.example/runs'],
    [`postgres://bridge:${PASSWORD}@[db.example/runs`, '(a URL that does not parse)'],
    [`mysql://bridge:${PASSWORD}@db.example/runs`, '(a URL that does not parse)'],
  ];
  for (const [url, shown] of cases) t.equal(redactDatabaseUrl(url), shown);
});

t.test("the bridge's log is scrubbed of the URL's password in every form", async (t) => {
  const url = `postgres://bridge:${encodeURIComponent(`${PASSWORD}/@`)}@db.example/runs?sslpassword=other-secret`;
  const secrets = databaseUrlSecrets(url);
  t.same(databaseUrlSecrets(null), [], 'no URL, nothing to scrub');
  const lines: string[] = [];
  const options = loggerOptions('info', secrets, { write: (line) => lines.push(line) });
  const written = [
    `connecting to ${url}`,
    `password ${PASSWORD}/@ as decoded`,
    `password ${encodeURIComponent(`${PASSWORD}/@`)} as written`,
    'the ssl key password other-secret',
  ];
  for (const line of written) options.stream.write(JSON.stringify({ msg: line }));
  t.equal(lines.length, written.length);
  for (const line of lines) {
    t.notOk(line.includes(PASSWORD), `scrubbed: ${line}`);
    t.notOk(line.includes('other-secret'), 'the query parameter password too');
  }
});
