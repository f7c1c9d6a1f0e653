import { useState } from 'preact/hooks';

/** A command to paste, shown whole with a copy button (the approvals list, the completion panel). */
export function Command({
  label: text,
  text: command,
  codeClass,
}: {
  label: string;
  text: string;
  codeClass: string;
}) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(command);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    } catch {
      setCopied(false);
    }
  };
  return (
    <div class="command">
      <span class="command-label">{text}</span>
      <pre>
        <code class={codeClass}>{command}</code>
      </pre>
      <button type="button" onClick={copy} aria-label={`Copy: ${command}`}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}
