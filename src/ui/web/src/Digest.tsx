import type { JSX } from 'preact';

/** Characters kept from each end of a shortened digest: enough to tell two apart by eye. */
const HEAD = 10;
const TAIL = 6;

export const shortDigest = (value: string): string =>
  value.length <= HEAD + TAIL + 1 ? value : `${value.slice(0, HEAD)}…${value.slice(-TAIL)}`;

/**
 * A SHA-256 shown shortened so it never widens a narrow screen. The whole value stays in the
 * document: read by screen readers, shown in place while the digest has the focus (it is
 * focusable), on hover as its title, and what a copy of any part of it puts on the clipboard, so a
 * pasted digest is never the shortened one.
 */
export function Digest({ value }: { value: string }) {
  const onCopy = (e: JSX.TargetedClipboardEvent<HTMLElement>) => {
    if (!e.clipboardData) return;
    e.clipboardData.setData('text/plain', value);
    e.preventDefault();
  };
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: focus is how a keyboard user reads the whole digest.
    <code class="digest" tabIndex={0} title={value} data-digest={value} onCopy={onCopy}>
      <span class="digest-short" aria-hidden="true">
        {shortDigest(value)}
      </span>
      <span class="digest-full">{value}</span>
    </code>
  );
}
