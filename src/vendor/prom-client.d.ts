// Types of `#prom-client` (package.json "imports"): the package's own declarations; the code is the
// bundle scripts/bundle-vendor.mjs writes to dist/vendor/prom-client (these names only).
export { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
