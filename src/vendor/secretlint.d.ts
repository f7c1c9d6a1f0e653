// Types of `#secretlint` (package.json "imports"): the packages' own declarations; the code is the
// bundle scripts/bundle-vendor.mjs writes to dist/vendor/secretlint (secretlint's core and its
// recommended rule preset, one file).
export { lintSource } from '@secretlint/core';
export { rules as recommendedRules } from '@secretlint/secretlint-rule-preset-recommend';
