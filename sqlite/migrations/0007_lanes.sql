-- Ordering lanes. An event keeps the order key and version its source
-- found (order_rank is the version's comparable form, '' when missing or
-- unreadable). A delivery to an ordered target keeps its lane (the key)
-- and rank; while it waits behind its lane's head its run_at is parked at
-- 2^62 ms, past any claim's reach in deliveries_due, and deliveries_lane
-- holds the waiting ones in lane order.
ALTER TABLE events ADD COLUMN order_key TEXT;
ALTER TABLE events ADD COLUMN order_version TEXT;
ALTER TABLE events ADD COLUMN order_rank TEXT;
CREATE INDEX events_order_key ON events (order_key) WHERE order_key IS NOT NULL;

ALTER TABLE deliveries ADD COLUMN lane TEXT;
ALTER TABLE deliveries ADD COLUMN rank TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN forced INTEGER NOT NULL DEFAULT 0;   -- replayed: never skipped
ALTER TABLE deliveries ADD COLUMN skip_reason TEXT NOT NULL DEFAULT '';
CREATE INDEX deliveries_lane ON deliveries (target, lane, rank, id) WHERE run_at = 4611686018427387904;
CREATE INDEX deliveries_skipped ON deliveries (skip_reason) WHERE status = 'skipped';

-- One row per (target, key) that ever had a delivery: its head (the one
-- delivery that may run), what was delivered last, and since when its
-- head has been failing.
CREATE TABLE lanes (
	target        TEXT    NOT NULL,
	key           TEXT    NOT NULL,
	head          INTEGER,            -- deliveries.id; NULL when nothing waits
	last_rank     TEXT    NOT NULL DEFAULT '',
	last_version  TEXT    NOT NULL DEFAULT '',
	last_event    INTEGER NOT NULL DEFAULT 0,
	blocked_since INTEGER,
	held_since    INTEGER,
	PRIMARY KEY (target, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX lanes_blocked ON lanes (blocked_since) WHERE blocked_since IS NOT NULL;
