/**
 * Opens any run by its ID, also one older than the runs the list reads: the run page reads it
 * from the bridge (and says so when there is no such run).
 */
export function OpenRun() {
  return (
    <form
      class="open-run"
      aria-label="Open a run by ID"
      onSubmit={(e) => {
        e.preventDefault();
        const id = String(new FormData(e.currentTarget).get('runId') ?? '').trim();
        if (id !== '') location.hash = `#/runs/${encodeURIComponent(id)}`;
      }}
    >
      <label for="open-run-id">Run ID</label>
      <input id="open-run-id" name="runId" type="text" autocomplete="off" spellcheck={false} required />
      <button type="submit">Open run</button>
    </form>
  );
}
