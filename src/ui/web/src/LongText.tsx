/** Characters of a text shown before the rest waits behind "Show all": about three lines. */
export const LONG_TEXT_SHOWN = 240;

/**
 * An agent-written text (a failure reason, a problem) in a panel meant to be read at a glance: a
 * long one shows its start, and the whole text behind a disclosure, so one text cannot push every
 * other decision off the first screen.
 */
export function LongText({ text }: { text: string }) {
  if (text.length <= LONG_TEXT_SHOWN) return <>{text}</>;
  return (
    <>
      {text.slice(0, LONG_TEXT_SHOWN)}…
      <details class="long-text">
        <summary>Show all {text.length} characters</summary>
        {text}
      </details>
    </>
  );
}
