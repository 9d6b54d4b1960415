-- The health alarms' state and the notices still to send (package health).
-- One row per alarm of one source or target that has ever fired.
CREATE TABLE health_alarms (
	alarm    text             NOT NULL,  -- duplicate_rate, oldest_queued, receive_to_done, target_failing, silence
	subject  text             NOT NULL,  -- the source or the target
	firing   boolean          NOT NULL,
	since    bigint           NOT NULL,  -- when it entered this state
	fired_at bigint           NOT NULL,  -- when it last began firing
	value    double precision NOT NULL,  -- the figure then
	bound    double precision NOT NULL,
	PRIMARY KEY (alarm, subject)
);

-- Each change of an alarm, to send through [alert] as the dead letters'
-- alerts are: due_at is when it is tried next, NULL once sent or given up.
CREATE TABLE health_notices (
	id       bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	alarm    text             NOT NULL,
	subject  text             NOT NULL,
	state    text             NOT NULL CHECK (state IN ('firing', 'resolved')),
	value    double precision NOT NULL,
	bound    double precision NOT NULL,
	fired_at bigint           NOT NULL,
	at       bigint           NOT NULL,
	due_at   bigint,
	tries    integer          NOT NULL DEFAULT 0,
	error    text             NOT NULL DEFAULT '',
	sent_at  bigint
);

CREATE INDEX health_notices_due ON health_notices (due_at) WHERE due_at IS NOT NULL;

-- The duplicates of a window: the events whose last redelivery is in it.
-- A new event has no last_seen_at and so no entry.
CREATE INDEX events_last_seen ON events (last_seen_at) WHERE last_seen_at IS NOT NULL;

-- A target's deliveries done in a window (receive-to-done) and its last
-- success, and its dead ones since (failed attempts in a row).
CREATE INDEX deliveries_finished ON deliveries (target, done_at) WHERE status IN ('done', 'dead');
