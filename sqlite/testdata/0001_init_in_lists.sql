-- events is both the raw inbox and the dedupe index: the UNIQUE (source, event_id)
-- constraint decides whether a request is new. Retention drops body and headers
-- first and deletes the row (the dedupe key) much later.
CREATE TABLE events (
	id             INTEGER PRIMARY KEY,
	source         TEXT    NOT NULL,
	event_id       TEXT    NOT NULL,
	type           TEXT    NOT NULL DEFAULT '',
	received_at    INTEGER NOT NULL,            -- unix milliseconds
	content_type   TEXT    NOT NULL DEFAULT '',
	headers        BLOB,                        -- JSON object, NULL once swept
	body           BLOB,                        -- raw bytes, NULL once swept
	body_size      INTEGER NOT NULL,
	redeliveries   INTEGER NOT NULL DEFAULT 0,
	last_seen_at   INTEGER,                     -- unix ms of the latest redelivery
	conflicts      INTEGER NOT NULL DEFAULT 0,  -- redeliveries whose body differed
	swept_at       INTEGER,
	UNIQUE (source, event_id)
) STRICT;

CREATE INDEX events_received ON events (received_at);

-- One row per (event, target): the delivery queue.
CREATE TABLE deliveries (
	id           INTEGER PRIMARY KEY,
	event        INTEGER NOT NULL REFERENCES events (id) ON DELETE CASCADE,
	target       TEXT    NOT NULL,
	status       TEXT    NOT NULL CHECK (status IN ('pending', 'running', 'retrying', 'done', 'dead', 'skipped')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	run_at       INTEGER NOT NULL,   -- due time; while running, the lease expiry
	lease_token  INTEGER NOT NULL DEFAULT 0,
	last_error   TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	done_at      INTEGER,
	UNIQUE (event, target)
) STRICT;

-- Matches the claim: due rows in run_at order; a running row whose lease
-- (run_at) has passed is due again.
CREATE INDEX deliveries_due ON deliveries (run_at, id) WHERE status IN ('pending', 'retrying', 'running');
CREATE INDEX deliveries_status ON deliveries (status, event);

CREATE TABLE attempts (
	id          INTEGER PRIMARY KEY,
	delivery    INTEGER NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	attempt     INTEGER NOT NULL,
	started_at  INTEGER NOT NULL,
	duration_us INTEGER NOT NULL,
	outcome     TEXT    NOT NULL CHECK (outcome IN ('ok', 'failed', 'interrupted', 'stale')),
	http_status INTEGER,
	exit_code   INTEGER,
	error       TEXT    NOT NULL DEFAULT '',
	output      TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX attempts_delivery ON attempts (delivery);

CREATE TABLE dead_letters (
	id             INTEGER PRIMARY KEY,
	delivery       INTEGER NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	event          INTEGER NOT NULL REFERENCES events (id) ON DELETE CASCADE,
	target         TEXT    NOT NULL,
	attempts       INTEGER NOT NULL,
	error          TEXT    NOT NULL,
	dead_at        INTEGER NOT NULL,
	revived_at     INTEGER,            -- set when a redelivery or replay put it back to pending
	alert_attempts INTEGER NOT NULL DEFAULT 0,
	alert_due_at   INTEGER,            -- NULL once alerted or given up
	alerted_at     INTEGER,
	alert_error    TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX dead_letters_alert ON dead_letters (alert_due_at) WHERE alert_due_at IS NOT NULL;
CREATE INDEX dead_letters_delivery ON dead_letters (delivery);
