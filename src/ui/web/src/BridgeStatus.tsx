import type { Problem } from './api.js';
import { formatTime, refusalHint } from './format.js';

/**
 * The bridge state, always visible. A lost bridge (proxy 502/504 or no answer at all) is said
 * plainly, with the age of the data still on screen, so stale state is never mistaken for live.
 */
export function BridgeStatus({ problem, at }: { problem: Problem | null; at: Date | null }) {
  if (problem?.lost) {
    return (
      <div class="banner lost" role="alert">
        <strong>Bridge lost.</strong> {problem.message} ({problem.code}
        {problem.status ? `, HTTP ${problem.status}` : ''}).{' '}
        {at ? `Showing data from ${formatTime(at.toISOString())}; ` : ''}retrying every 2 s.
      </div>
    );
  }
  if (problem) {
    return (
      <div class="banner error" role="alert">
        <strong>The bridge refused the read:</strong> {problem.message} ({problem.code}
        {problem.status ? `, HTTP ${problem.status}` : ''}) {refusalHint(problem.code)}
        {problem.problems.length > 0 && (
          <ul>
            {problem.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
      </div>
    );
  }
  return (
    <p class="status-line" role="status">
      {at ? `Connected · updated ${at.toLocaleTimeString()}` : 'Connecting to the bridge…'}
    </p>
  );
}
