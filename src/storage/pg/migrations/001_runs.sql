CREATE TABLE harness_runs (
  ordinal bigserial PRIMARY KEY,
  run_id text NOT NULL UNIQUE,
  created_at text NOT NULL,
  config text NOT NULL,
  head_count bigint NOT NULL DEFAULT 0,
  head_mac text NOT NULL DEFAULT '',
  head_seal text NOT NULL DEFAULT ''
);
CREATE TABLE harness_records (
  run_id text NOT NULL,
  seq bigint NOT NULL,
  line text NOT NULL,
  PRIMARY KEY (run_id, seq)
);
