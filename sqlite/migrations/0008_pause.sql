-- hookbox pause TARGET holds a target's queued deliveries: they wait as
-- 'paused', outside the due index, so no claim takes them, no attempt is
-- spent and no retry clock runs, until hookbox resume TARGET puts them back.
--
-- The status CHECK gains 'paused'. It is rewritten in place, as 0003 did
-- (every stored row satisfies the new form, which only allows one value
-- more), rather than by copying a table that may hold millions of rows.
-- The CREATE TABLE below changes the schema cookie in the same
-- transaction, so every other connection parses the new CHECK before its
-- next statement; RESET makes this one parse it at once.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
	SET sql = replace(sql, 'OR status = ''skipped'')', 'OR status = ''skipped'' OR status = ''paused'')')
	WHERE type = 'table' AND name = 'deliveries' AND instr(sql, 'status = ''paused''') = 0;
PRAGMA writable_schema = RESET;

-- Fail the migration, rather than go on without the new status, if the
-- CHECK's text was not the one replaced above.
CREATE TEMP TABLE pause_migration_check (ok INTEGER NOT NULL CHECK (ok = 1));
INSERT INTO pause_migration_check
	SELECT instr(sql, 'OR status = ''paused'')') > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'deliveries';
DROP TABLE pause_migration_check;

-- The paused targets, by name, with the time each was paused.
CREATE TABLE paused_targets (
	target    TEXT    PRIMARY KEY,
	paused_at INTEGER NOT NULL      -- unix milliseconds
) STRICT;

-- The paused deliveries of a target: what resume releases and what the
-- queue counts add to the due index's rows.
CREATE INDEX deliveries_paused ON deliveries (target) WHERE status = 'paused';

-- Whatever puts a delivery of a paused target in the queue (a new event, a
-- failed attempt's retry, a replay, a redelivery reviving a dead one, an
-- interrupted attempt released, a claim returned unstarted) leaves it
-- paused instead. In the store, not in each statement: every writer
-- (serve, the commands, an older build's statements) holds to it, and the
-- statements of the queue stay as they were. The test of the target comes
-- second: for every other row the trigger costs one comparison.
CREATE TRIGGER deliveries_pause_insert AFTER INSERT ON deliveries
	WHEN (NEW.status = 'pending' OR NEW.status = 'retrying')
		AND EXISTS (SELECT 1 FROM paused_targets WHERE target = NEW.target)
BEGIN
	UPDATE deliveries SET status = 'paused' WHERE id = NEW.id;
END;

CREATE TRIGGER deliveries_pause_update AFTER UPDATE OF status ON deliveries
	WHEN (NEW.status = 'pending' OR NEW.status = 'retrying')
		AND EXISTS (SELECT 1 FROM paused_targets WHERE target = NEW.target)
BEGIN
	UPDATE deliveries SET status = 'paused' WHERE id = NEW.id;
END;
