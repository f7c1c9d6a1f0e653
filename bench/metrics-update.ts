import { BridgeMetrics } from '../src/server/metrics.js';

/**
 * What the metrics add to an accepted event's CPU (docs/operations.md "Metrics"): the in-place
 * updates an event makes (the accepted counter and the durable-time histogram, and its share of a
 * commit batch's observation), timed over many events against the same loop with no update.
 * `node dist/bench/metrics-update.js [events] [rounds]` after `npm run build`.
 */
const events = Number(process.argv[2] ?? 2_000_000);
const rounds = Number(process.argv[3] ?? 7);
const metrics = new BridgeMetrics({
  queuePending: () => 0,
  runQueueMax: () => 0,
  poolBusy: () => 0,
  poolQueued: () => 0,
});
let sink = 0;

function loop(update: boolean): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < events; i++) {
    const seconds = (i % 1000) / 200_000;
    if (update) {
      metrics.eventAccepted(false, seconds);
      // One batch of 16 events: its observation, shared.
      if ((i & 15) === 0) metrics.batchDurable(16);
    } else sink += seconds;
  }
  return Number(process.hrtime.bigint() - start) / events;
}

const added: number[] = [];
for (let r = 0; r < rounds + 1; r++) {
  const base = loop(false);
  const withMetrics = loop(true);
  if (r > 0) added.push(withMetrics - base); // the first round warms up
}
added.sort((a, b) => a - b);
const median = added[Math.floor(added.length / 2)]!;
console.log(
  `metric updates per accepted event: median ${median.toFixed(1)} ns (range ${added[0]!.toFixed(1)}-${added.at(-1)!.toFixed(1)} ns over ${rounds} rounds of ${events} events)${sink < 0 ? '' : ''}`,
);
