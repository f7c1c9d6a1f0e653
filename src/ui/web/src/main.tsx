import { render } from 'preact';
import { useRef } from 'preact/hooks';
import { useRoute } from './hooks.js';
import { RunPage } from './RunPage.js';
import { RunsList } from './RunsList.js';
import './styles.css';
import './run.css';
import './runs.css';

function App() {
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  return (
    <>
      {/* Hash routing owns the URL fragment, so the skip link is a button that moves focus. */}
      <button type="button" class="skip" onClick={() => main.current?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href="#/">
          Harness runs
        </a>
        <span class="muted">read-only view of the local bridge</span>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {route.page === 'run' ? (
          <RunPage key={route.id} runId={route.id} />
        ) : (
          <RunsList search={route.search} />
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
