CREATE TABLE harness_quarantines (
  run_id text NOT NULL,
  reason text NOT NULL,
  kind text NOT NULL,
  since text NOT NULL,
  PRIMARY KEY (run_id, reason)
);
CREATE TABLE harness_run_leases (
  run_id text PRIMARY KEY,
  holder text NOT NULL,
  token bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
