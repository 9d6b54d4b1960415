-- hookbox's PostgreSQL schema: the SQLite engine's tables, with PostgreSQL's
-- types. Times are unix milliseconds in bigint columns, as in the SQLite
-- engine: the domain code and the conformance suite keep times to the
-- millisecond, and one representation keeps both engines' statements alike.

-- events is both the raw inbox and the dedupe index: the UNIQUE (source,
-- event_id) constraint decides, through INSERT … ON CONFLICT, whether a
-- request is new, however many replicas receive copies at once.
CREATE TABLE events (
	id             bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	source         text    NOT NULL,
	event_id       text    NOT NULL,
	type           text    NOT NULL DEFAULT '',
	received_at    bigint  NOT NULL,
	content_type   text    NOT NULL DEFAULT '',
	headers        jsonb,                       -- NULL once swept
	body           bytea,                       -- raw bytes, NULL once swept
	body_size      bigint  NOT NULL,
	redeliveries   bigint  NOT NULL DEFAULT 0,
	last_seen_at   bigint,
	conflicts      bigint  NOT NULL DEFAULT 0,  -- redeliveries whose body differed
	swept_at       bigint,
	UNIQUE (source, event_id)
);

CREATE INDEX events_received ON events (received_at);

-- One row per (event, target): the delivery queue.
CREATE TABLE deliveries (
	id           bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	event        bigint  NOT NULL REFERENCES events (id) ON DELETE CASCADE,
	target       text    NOT NULL,
	status       text    NOT NULL CHECK (status IN ('pending', 'running', 'retrying', 'done', 'dead', 'skipped')),
	attempts     integer NOT NULL DEFAULT 0,
	run_at       bigint  NOT NULL,   -- due time; while running, the lease expiry
	lease_token  bigint  NOT NULL DEFAULT 0,
	last_error   text    NOT NULL DEFAULT '',
	dead_reason  text    NOT NULL DEFAULT '',
	created_at   bigint  NOT NULL,
	done_at      bigint,
	UNIQUE (event, target)
);

-- Matches the claim: queued rows in (run_at, id) order; a running row whose
-- lease (run_at) has passed is due again.
CREATE INDEX deliveries_due ON deliveries (run_at, id) WHERE status IN ('pending', 'retrying', 'running');

-- Each claim takes a fresh token from here: a worker whose lease was taken
-- over holds an older one, and its renewals and completions match no row.
CREATE SEQUENCE lease_tokens;

CREATE TABLE attempts (
	id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	delivery    bigint  NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	attempt     integer NOT NULL,
	started_at  bigint  NOT NULL,
	duration_us bigint  NOT NULL,
	outcome     text    NOT NULL CHECK (outcome IN ('ok', 'failed', 'interrupted', 'stale')),
	http_status integer,
	exit_code   integer,
	error       text    NOT NULL DEFAULT '',
	output      text    NOT NULL DEFAULT ''
);

CREATE INDEX attempts_delivery ON attempts (delivery);

CREATE TABLE dead_letters (
	id             bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	delivery       bigint  NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	event          bigint  NOT NULL REFERENCES events (id) ON DELETE CASCADE,
	target         text    NOT NULL,
	attempts       integer NOT NULL,
	error          text    NOT NULL,
	dead_at        bigint  NOT NULL,
	revived_at     bigint,             -- set when a redelivery or replay put it back to pending
	alert_attempts integer NOT NULL DEFAULT 0,
	alert_due_at   bigint,             -- NULL once alerted or given up
	alerted_at     bigint,
	alert_error    text    NOT NULL DEFAULT ''
);

CREATE INDEX dead_letters_alert ON dead_letters (alert_due_at) WHERE alert_due_at IS NOT NULL;
CREATE INDEX dead_letters_delivery ON dead_letters (delivery);
CREATE INDEX dead_letters_event ON dead_letters (event);
