import t from 'tap';
import { refusalHint } from '../../src/ui/web/src/format.js';

/**
 * A UI server started with an access token the bridge does not hold is refused on every read;
 * the banner then says what to fix (the UI server's token), not only what the bridge answered.
 */
t.test('a refused access token names the UI server setting to fix', async (t) => {
  t.match(
    refusalHint('bridge_auth_required'),
    /HARNESS_BRIDGE_ACCESS_TOKEN is not the bridge's: restart `harness ui`/,
  );
});

t.test('refusals a page can explain itself get no hint', async (t) => {
  for (const code of ['not_found', 'invalid_query', 'run_quarantined', 'origin_not_allowed'])
    t.equal(refusalHint(code), null, code);
});
