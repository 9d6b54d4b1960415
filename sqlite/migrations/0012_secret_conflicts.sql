-- Which of its source's secrets verified an event: secret_index counts from
-- 0 in the config's order, of secret_count, how many the source had when
-- the event arrived. A secret_count of 0 is an event no secret was checked
-- for (an unsigned source, the local sink) or one stored before this
-- migration. A redelivery changes neither: the first copy's stays. The
-- defaults add the columns without rewriting the table.
ALTER TABLE events ADD COLUMN secret_index INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN secret_count INTEGER NOT NULL DEFAULT 0;

-- The copies of an event that arrived with the same (source, event_id) but
-- a different body (events.conflicts counts them), kept so that the event's
-- page can show how they differ from the body kept: written only when a
-- redelivery conflicts, never for a new event or a plain redelivery. The
-- last few of an event are kept (sqlite/conflicts.go), each within its
-- source's max_body, which the receiver enforces. Retention removes them
-- with the event's own body (Sweep), and deleting the event deletes them.
CREATE TABLE conflicts (
	id           INTEGER PRIMARY KEY,
	event        INTEGER NOT NULL REFERENCES events (id) ON DELETE CASCADE,
	received_at  INTEGER NOT NULL,           -- unix milliseconds
	content_type TEXT    NOT NULL DEFAULT '',
	headers      BLOB,                       -- JSON object, as events.headers
	body         BLOB    NOT NULL,
	body_size    INTEGER NOT NULL
) STRICT;

CREATE INDEX conflicts_event ON conflicts (event);
