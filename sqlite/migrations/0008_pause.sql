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

-- The triggers that keep a paused target's deliveries paused exist only
-- while a target is paused: hookbox pause creates them and the resume of
-- the last paused target drops them (sqlite/paused_targets.go), so that a
-- store with no target paused pays nothing for them on each delivery.
