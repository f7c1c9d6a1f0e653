import t from 'tap';

/**
 * `serveBridge` hands the heap-growth governor (src/server/heap-growth.ts) every eviction. A file
 * of its own, not in test/server/: `t.mockImport` loads fresh copies of the modules below
 * src/cli/bridge.ts, which must not share a process with the group's other files.
 */
const MODULE = new URL('../src/server/heap-growth.js', import.meta.url).href;

t.test('`harness bridge` and `harness start` give the governor every eviction', async (t) => {
  const noteEviction = () => {};
  let given: unknown;
  const { serveBridge } = await t.mockImport<typeof import('../src/cli/bridge.js')>(
    new URL('../src/cli/bridge.js', import.meta.url).href,
    {
      [MODULE]: { heapGrowthGovernor: () => ({ noteEviction }) },
      [new URL('../src/server/start.js', import.meta.url).href]: {
        startBridge: async (opts: { onEvict?: unknown }) => {
          given = opts.onEvict;
          throw new Error('started');
        },
      },
    },
  );
  // A database URL: no startup reader of a data directory before the (stand-in) bridge starts.
  await t.rejects(serveBridge({ HARNESS_DATABASE_URL: 'postgres://127.0.0.1:2/none' }), /^started$/);
  t.equal(given, noteEviction);
});
