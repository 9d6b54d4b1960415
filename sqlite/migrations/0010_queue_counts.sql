-- The queue's figures by target (metrics: hookbox_deliveries{target,status},
-- hookbox_oldest_queued_seconds{target}) at every scrape, and the admission
-- budget ([store] max_queued) every second. Counting them, even from an
-- index that covers them, reads every waiting row: 0.3 s to 0.6 s for a
-- million on a loaded 2-core machine. queue_counts keeps the counts
-- instead, by target and waiting status, kept by triggers in the
-- transaction that changes a delivery (the store has one writer, so the
-- counter rows see no contention); a scrape reads a few rows, and the age
-- of each target's oldest waiting delivery is one seek in
-- deliveries_waiting. 'paused' counts as waiting: a held target's
-- deliveries are not forgotten.
CREATE TABLE queue_counts (
	target TEXT    NOT NULL,
	status TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (target, status)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts (target, status, n)
	SELECT target, status, count(*) FROM deliveries
	WHERE (status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused')
	GROUP BY target, status;

CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries
	WHEN NEW.status = 'pending' OR NEW.status = 'retrying' OR NEW.status = 'running' OR NEW.status = 'paused'
BEGIN
	INSERT INTO queue_counts (target, status, n) VALUES (NEW.target, NEW.status, 1)
		ON CONFLICT (target, status) DO UPDATE SET n = n + 1;
END;

-- Only waiting statuses have a row: leaving done, dead or skipped changes
-- none, entering them adds none.
CREATE TRIGGER deliveries_count_update AFTER UPDATE OF status, target ON deliveries
	WHEN OLD.status <> NEW.status OR OLD.target <> NEW.target
BEGIN
	UPDATE queue_counts SET n = n - 1 WHERE target = OLD.target AND status = OLD.status;
	INSERT INTO queue_counts (target, status, n)
		SELECT NEW.target, NEW.status, 1
		WHERE NEW.status = 'pending' OR NEW.status = 'retrying' OR NEW.status = 'running' OR NEW.status = 'paused'
		ON CONFLICT (target, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries
BEGIN
	UPDATE queue_counts SET n = n - 1 WHERE target = OLD.target AND status = OLD.status;
END;

CREATE INDEX deliveries_waiting ON deliveries (target, created_at)
	WHERE (status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused');
