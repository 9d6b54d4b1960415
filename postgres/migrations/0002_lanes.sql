-- Ordering lanes, as the SQLite engine's migration 0007. An event keeps the
-- order key and version its source found (order_rank is the version's
-- comparable form, '' when missing or unreadable). A delivery to an
-- ordered target keeps its lane (the key) and rank; while it waits behind
-- its lane's head its run_at is parked at 2^62 ms, past any claim's reach,
-- and deliveries_lane holds the waiting ones in lane order. Ranks compare
-- byte by byte (COLLATE "C"), as their encoding requires.
ALTER TABLE events ADD COLUMN order_key text;
ALTER TABLE events ADD COLUMN order_version text;
ALTER TABLE events ADD COLUMN order_rank text COLLATE "C";
CREATE INDEX events_order_key ON events (order_key) WHERE order_key IS NOT NULL;

ALTER TABLE deliveries ADD COLUMN lane text;
ALTER TABLE deliveries ADD COLUMN rank text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN forced boolean NOT NULL DEFAULT false;   -- replayed: never skipped
ALTER TABLE deliveries ADD COLUMN skip_reason text NOT NULL DEFAULT '';
CREATE INDEX deliveries_lane ON deliveries (target, lane, rank, id) WHERE run_at = 4611686018427387904;
CREATE INDEX deliveries_skipped ON deliveries (skip_reason) WHERE status = 'skipped';

-- One row per (target, key) that ever had a delivery. Every change of a
-- lane's head (ingest, completion, replay) holds this row's lock, so a
-- lane's deliveries run one at a time whatever the number of replicas.
CREATE TABLE lanes (
	target        text    NOT NULL,
	key           text    NOT NULL,
	head          bigint,             -- deliveries.id; NULL when nothing waits
	last_rank     text    COLLATE "C" NOT NULL DEFAULT '',
	last_version  text    NOT NULL DEFAULT '',
	last_event    bigint  NOT NULL DEFAULT 0,
	blocked_since bigint,
	held_since    bigint,
	PRIMARY KEY (target, key)
);

CREATE INDEX lanes_blocked ON lanes (blocked_since) WHERE blocked_since IS NOT NULL;
