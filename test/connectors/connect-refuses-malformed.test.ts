import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import {
  connect,
  FILES,
  harness,
  RUNTIME_NAMES,
  type RuntimeName,
  sandbox,
  snapshot,
} from '../helpers/connect.js';

/**
 * A configuration file `harness connect` cannot parse, or could edit only by losing content, is
 * refused: exit 2, one line on stderr naming the file, and nothing written (no backup either).
 * The same for usage errors. Needs `npm run build`.
 */

const EVENT: Record<RuntimeName, string> = {
  'claude-code': 'PreToolUse',
  codex: 'PreToolUse',
  gemini: 'BeforeTool',
};

/** [what, the hooks file's text] */
const badHooks = (runtime: RuntimeName): [string, string][] => [
  ['not JSON', '{"hooks": {'],
  ['a trailing comma', '{"hooks": {},}'],
  ['not an object', '[]'],
  ['hooks not an object', '{"hooks": []}'],
  ['an event not an array', `{"hooks": {"${EVENT[runtime]}": {"matcher": "*"}}}`],
  ['a duplicate hooks key', '{"hooks": {}, "model": "x", "hooks": {}}'],
  ['not UTF-8', ''],
];

async function refused(t: Test, s: Awaited<ReturnType<typeof sandbox>>, runtime: string, file: string) {
  const before = await snapshot(s.root);
  const r = await connect(s, runtime, 'project');
  t.equal(r.code, 2, 'exit 2');
  t.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr.trimEnd()}`);
  t.match(r.stderr, join(s.root, file), 'naming the file');
  t.same(await snapshot(s.root), before, 'nothing written, no backup');
}

for (const runtime of RUNTIME_NAMES)
  t.test(`${runtime}: a hooks file it cannot parse or edit is refused`, async (t) => {
    for (const [what, text] of badHooks(runtime))
      await t.test(what, async (t) => {
        const s = await sandbox(t, runtime);
        const file = FILES[runtime].project.hooks;
        await mkdir(dirname(join(s.root, file)), { recursive: true });
        // Valid JSON once decoded (0xff becomes U+FFFD), but writing that back would change the byte.
        const bytes =
          what === 'not UTF-8'
            ? Buffer.concat([Buffer.from('{"model": "'), Buffer.from([0xff]), Buffer.from('"}')])
            : text;
        await writeFile(join(s.root, file), bytes);
        await refused(t, s, runtime, file);
      });
  });

t.test('codex: a config.toml it cannot parse or append to is refused', async (t) => {
  for (const [what, text] of [
    ['not TOML', 'model = \n'],
    ['mcp_servers not a table', 'mcp_servers = 3\n'],
    ['mcp_servers an inline table', 'mcp_servers = { docs = { command = "docs" } }\n'],
    [
      'ours as dotted keys',
      '[mcp_servers]\nharness.command = "node"\nharness.args = ["/old/dist/src/cli/main.cjs", "mcp"]\n',
    ],
  ])
    await t.test(what!, async (t) => {
      const s = await sandbox(t, 'codex');
      await writeFile(join(s.root, FILES.codex.project.mcp), text!);
      await refused(t, s, 'codex', FILES.codex.project.mcp);
    });
});

t.test('gemini: a settings.json whose mcpServers is not an object is refused', async (t) => {
  const s = await sandbox(t, 'gemini');
  await writeFile(join(s.root, FILES.gemini.project.hooks), '{"mcpServers": ["harness"]}');
  await refused(t, s, 'gemini', FILES.gemini.project.hooks);
});

t.test('usage errors exit 2 and write nothing', async (t) => {
  const s = await sandbox(t, 'claude-code');
  const before = await snapshot(s.root);
  const both = await harness(['connect', 'claude-code', '--user', '--project', s.project], s.env, s.project);
  t.equal(both.code, 2, '--project with --user');
  const unknown = await harness(['connect', 'cursor'], s.env, s.project);
  t.equal(unknown.code, 2, 'an unknown runtime');
  t.match(unknown.stderr, /claude-code, codex, gemini/, 'lists the three');
  const typo = await harness(['connect', 'claude-code', '--project', `${s.project}-typo`], s.env, s.project);
  t.equal(typo.code, 2, 'a --project that is not a directory');
  t.same(await snapshot(s.root), before);
});
