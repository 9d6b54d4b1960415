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
-- paused instead. In the store, not in each statement: every writer, on
-- every replica, holds to it, and the queue's statements stay as they
-- were. Pause and resume lock the table against writers while they change
-- paused_targets: a write that read the old paused_targets commits before
-- them, and they then move its rows.
CREATE FUNCTION deliveries_pause() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM paused_targets WHERE target = NEW.target) THEN
		NEW.status := 'paused';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER deliveries_pause BEFORE INSERT OR UPDATE OF status ON deliveries
	FOR EACH ROW WHEN (NEW.status IN ('pending', 'retrying'))
	EXECUTE FUNCTION deliveries_pause();
