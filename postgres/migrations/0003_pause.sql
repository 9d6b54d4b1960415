-- hookbox pause TARGET holds a target's queued deliveries: they wait as
-- 'paused', outside the due index, so no claim takes them, no attempt is
-- spent and no retry clock runs, until hookbox resume TARGET puts them back.
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
	CHECK (status IN ('pending', 'running', 'retrying', 'done', 'dead', 'skipped', 'paused'));

-- The paused targets, by name, with the time each was paused.
CREATE TABLE paused_targets (
	target    text   PRIMARY KEY,
	paused_at bigint NOT NULL
);

-- The paused deliveries of a target: what resume releases and what the
-- queue counts add to the due index's rows.
CREATE INDEX deliveries_paused ON deliveries (target) WHERE status = 'paused';

-- Whatever puts a delivery of a paused target in the queue (a new event, a
-- failed attempt's retry, a replay, a redelivery reviving a dead one, an
-- interrupted attempt released, a claim returned unstarted) leaves it
-- paused instead: the trigger deliveries_pause calls this on each such
-- row. The trigger exists only while a target is paused (hookbox pause
-- creates it, the resume of the last paused target drops it:
-- postgres/paused_targets.go), so that a database with no target paused
-- pays nothing for it on each delivery.
CREATE FUNCTION deliveries_pause() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM paused_targets WHERE target = NEW.target) THEN
		NEW.status := 'paused';
	END IF;
	RETURN NEW;
END
$$;
