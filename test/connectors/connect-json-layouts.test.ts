import { parse } from 'jsonc-parser';
import t from 'tap';
import { claudeCode } from '../../src/connectors/claude-code.js';
import { gemini } from '../../src/connectors/gemini.js';
import { installHooks, installMcp, removeHooks, removeMcp } from '../../src/connectors/json-config.js';
import { ConfigFileError, parseJson } from '../../src/connectors/json-edit.js';

/**
 * The JSON edits keep a file's own layout, whatever it is: one line, CRLF, tabs, inline groups,
 * trailing line and block comments. Install then remove gives the original bytes back; a second
 * install changes nothing; the file after install parses to the original values plus ours.
 */

const launcher = { node: '/usr/bin/node', entry: '/opt/harness/dist/src/cli/main.cjs' };

const LAYOUTS: Record<string, string> = {
  'one line': '{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"a"}]}]}}',
  'one line, spaced': '{ "model": "x", "mcpServers": { "a": { "command": "a" } } }\n',
  CRLF: '{\r\n  "model": "x",\r\n  "hooks": {\r\n    "Stop": []\r\n  }\r\n}\r\n'.replace(
    '"Stop": []',
    '"Stop": [{"hooks": []}]',
  ),
  tabs: '{\n\t"hooks": {\n\t\t"PreToolUse": [\n\t\t\t{"matcher": "Bash", "hooks": []}\n\t\t]\n\t}\n}\n',
  'four spaces': '{\n    "a": {\n        "b": 1\n    }\n}',
  'inline groups':
    '{\n  "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [] }], "BeforeTool": [{ "hooks": [] }] }\n}\n',
  'trailing line comments':
    '{\n  "a": 1, // one\n  "hooks": {\n    "Stop": [\n      { "hooks": [] } // theirs\n    ]\n  } // end\n}\n',
  'block comments': '{\n  /* lead */ "a": 1 /* after a */\n}\n',
  'comments only in the object': '{\n  // nothing yet\n  "a": {}\n}\n',
};

for (const table of [claudeCode, gemini])
  for (const [name, text] of Object.entries(LAYOUTS))
    t.test(`${table.name}: ${name}`, async (t) => {
      const doc = parseJson('f.json', text);
      const installed = installMcp(installHooks(doc, table, launcher), launcher);
      t.equal(
        installMcp(installHooks(installed, table, launcher), launcher).text,
        installed.text,
        'idempotent',
      );
      t.equal(removeMcp(removeHooks(installed, table), launcher).text, text, 'the original bytes back');
      const before = parse(text);
      const after = parse(installed.text);
      t.same(after['model'], before['model']);
      for (const [event, groups] of Object.entries<unknown[]>(before['hooks'] ?? {}))
        t.same(after['hooks'][event].slice(0, groups.length), groups, `${event}: theirs first`);
      t.same(after['mcpServers']['harness'], { command: launcher.node, args: [launcher.entry, 'mcp'] });
      if (text.includes('\r\n')) t.notOk(/[^\r]\n/.test(installed.text), 'CRLF throughout');
      if (text.includes('\t')) t.notMatch(installed.text, /^\t* /m, 'tabs throughout');
      if (/\n( +)\S/.exec(text)?.[1] === '    ')
        t.notMatch(installed.text, /^( {4})* {1,3}\S/m, 'four spaces a level throughout');
      if (!text.trim().includes('\n')) t.notOk(installed.text.trim().includes('\n'), 'still one line');
    });

t.test('an empty hooks object is filled, and dropped again on remove', async (t) => {
  const text = '{\n  "hooks": {}\n}\n';
  const installed = installHooks(parseJson('f.json', text), claudeCode, launcher);
  t.equal(parse(installed.text)['hooks']['Stop'].length, 1);
  t.equal(removeHooks(installed, claudeCode).text, '{\n}\n', 'the emptied hooks object goes');
});

t.test('an empty file is written as a new one', async (t) => {
  const installed = installHooks(parseJson('f.json', ' \n'), claudeCode, launcher);
  t.equal(Object.keys(parse(installed.text)['hooks']).length, 4);
});

t.test('a duplicate key on our path is refused', async (t) => {
  const doc = parseJson('f.json', '{"mcpServers": {"harness": {}, "harness": {}}}');
  t.throws(() => installMcp(doc, launcher), ConfigFileError);
});
