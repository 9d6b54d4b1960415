-- The health alarms' state and the notices still to send (package health).
-- One row per alarm of one source or target that has ever fired.
CREATE TABLE health_alarms (
	alarm    TEXT    NOT NULL,   -- duplicate_rate, oldest_queued, receive_to_done, target_failing, silence
	subject  TEXT    NOT NULL,   -- the source or the target
	firing   INTEGER NOT NULL CHECK (firing = 0 OR firing = 1),
	since    INTEGER NOT NULL,   -- unix ms: when it entered this state
	fired_at INTEGER NOT NULL,   -- unix ms: when it last began firing
	value    REAL    NOT NULL,   -- the figure then
	bound    REAL    NOT NULL,
	PRIMARY KEY (alarm, subject)
) STRICT;

-- Each change of an alarm, to send through [alert] as the dead letters'
-- alerts are: due_at is when it is tried next, NULL once sent or given up.
CREATE TABLE health_notices (
	id       INTEGER PRIMARY KEY,
	alarm    TEXT    NOT NULL,
	subject  TEXT    NOT NULL,
	state    TEXT    NOT NULL CHECK (state = 'firing' OR state = 'resolved'),
	value    REAL    NOT NULL,
	bound    REAL    NOT NULL,
	fired_at INTEGER NOT NULL,
	at       INTEGER NOT NULL,
	due_at   INTEGER,
	tries    INTEGER NOT NULL DEFAULT 0,
	error    TEXT    NOT NULL DEFAULT '',
	sent_at  INTEGER
) STRICT;

CREATE INDEX health_notices_due ON health_notices (due_at) WHERE due_at IS NOT NULL;

-- The duplicates of a window: the events whose last redelivery is in it.
-- A new event has no last_seen_at and so no entry: receiving stays as it was.
CREATE INDEX events_last_seen ON events (last_seen_at) WHERE last_seen_at IS NOT NULL;

-- A target's deliveries done in a window (receive-to-done) and its last
-- success, and its dead ones since (failed attempts in a row).
CREATE INDEX deliveries_finished ON deliveries (target, done_at) WHERE (status = 'done' OR status = 'dead');
