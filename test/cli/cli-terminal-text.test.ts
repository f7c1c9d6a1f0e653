import t from 'tap';
import { describeFailure } from '../../src/cli/http.js';
import { terminalJson, terminalText } from '../../src/cli/terminal.js';

/** Bridge text is written to the operator's terminal with every control and bidi character visible. */
t.test('terminalText', async (t) => {
  t.equal(terminalText('plain text, ünïcode and 😀 stay'), 'plain text, ünïcode and 😀 stay');
  t.equal(terminalText('a\u001b[31mred'), 'a\\u{1b}[31mred');
  t.equal(terminalText('line\nbreak\r'), 'line\\u{a}break\\u{d}');
  t.equal(terminalText('\u007f\u0085\u009b'), '\\u{7f}\\u{85}\\u{9b}');
  t.equal(terminalText('abc\u202edcba\u2066x\u2069'), 'abc\\u{202e}dcba\\u{2066}x\\u{2069}');
  t.equal(terminalText('\u061c\u200e\u200f'), '\\u{61c}\\u{200e}\\u{200f}', 'the bidi marks too');
});

t.test('describeFailure escapes the message and every problem', async (t) => {
  const text = describeFailure({
    status: 409,
    body: {
      ok: false,
      error: 'finish_line_blocked',
      message: 'refused\u001b[2J',
      problems: ['p\u0007', 'ok'],
    },
  } as never);
  t.equal(text, 'finish_line_blocked: refused\\u{1b}[2J\n  - p\\u{7}\n  - ok');
});

t.test('terminalJson writes DEL, C1 and bidi characters as JSON escapes', async (t) => {
  const value = { path: 'a\u001b[2J\u007f\u009b31m\u202eb', n: 1, ok: 'ünïcode 😀' };
  const text = terminalJson(value, 2);
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/.test(text), 'only newlines are raw');
  t.ok(text.includes('a\\u001b[2J\\u007f\\u009b31m\\u202eb'));
  t.same(JSON.parse(text), value, 'the same value');
});
