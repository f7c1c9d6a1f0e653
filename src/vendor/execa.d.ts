// Types of `#execa` (package.json "imports"): the package's own declarations; the code is the
// bundle scripts/bundle-vendor.mjs writes to dist/vendor/execa.
export * from 'execa';
