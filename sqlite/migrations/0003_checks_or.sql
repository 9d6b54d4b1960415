-- A store made by the earlier 0001 still checks deliveries.status and
-- attempts.outcome with IN lists, a temporary b-tree on every row written
-- (see 0002). The CHECK text is rewritten in place to the equivalent OR
-- chains, the procedure SQLite documents for changing a CHECK constraint
-- without rebuilding the table: every stored row satisfies both forms.
-- RESET makes this connection parse the schema again at once; others keep
-- the equivalent old form until they reopen. On any other store the text
-- has no IN list and nothing changes.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
	SET sql = replace(sql,
		'CHECK (status IN (''pending'', ''running'', ''retrying'', ''done'', ''dead'', ''skipped''))',
		'CHECK (status = ''pending'' OR status = ''running'' OR status = ''retrying'' OR status = ''done'' OR status = ''dead'' OR status = ''skipped'')')
	WHERE type = 'table' AND name = 'deliveries';
UPDATE sqlite_schema
	SET sql = replace(sql,
		'CHECK (outcome IN (''ok'', ''failed'', ''interrupted'', ''stale''))',
		'CHECK (outcome = ''ok'' OR outcome = ''failed'' OR outcome = ''interrupted'' OR outcome = ''stale'')')
	WHERE type = 'table' AND name = 'attempts';
PRAGMA writable_schema = RESET;
