-- The status tests of the hot tables are written as OR chains, not IN lists:
-- SQLite evaluates an IN list of three or more values through a temporary
-- b-tree that it builds and frees on every INSERT or UPDATE of the row, which
-- cost a fifth of each claim and completion. 0001 now creates the OR forms;
-- this rebuilds the claim index of a store made by the earlier 0001, whose
-- partial-index condition the claim query (which names the index) must match.
-- 0003 rewrites such a store's IN-list CHECK constraints.
DROP INDEX IF EXISTS deliveries_due;
CREATE INDEX deliveries_due ON deliveries (run_at, id) WHERE (status = 'pending' OR status = 'retrying' OR status = 'running');
