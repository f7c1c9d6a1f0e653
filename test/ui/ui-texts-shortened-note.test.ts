import t from 'tap';
import { textsShortenedNote } from '../../src/ui/web/src/format.js';

/**
 * The run page says when the run view shortened node and artifact texts (`textsShortened`), and
 * where the whole texts are: each text's own event (the journal keeps it whole).
 */
t.test('the note counts the shortened texts and names where the whole ones are', async (t) => {
  t.equal(
    textsShortenedNote(3),
    "3 node or artifact texts shortened to keep this view within the bridge's response limit; the event that set each text holds it whole.",
  );
  t.match(textsShortenedNote(1), /^1 node or artifact text shortened /);
});
