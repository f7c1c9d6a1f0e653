// Types of `#typebox` (package.json "imports"): the package's own declarations; the code is
// the bundle scripts/bundle-vendor.mjs writes to dist/vendor/typebox.
export * from 'typebox';
