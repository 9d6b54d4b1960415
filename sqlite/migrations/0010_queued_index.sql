-- The queue's figures by target (metrics: hookbox_deliveries{target,status},
-- hookbox_oldest_queued_seconds{target}) and the admission budget
-- ([store] max_queued) are read at every scrape and every few seconds. The
-- claim index (deliveries_due) holds the same rows but not their target,
-- status and age: counting through it read every queued row from the
-- table, 0.8 s for a million. This partial index covers those reads, which
-- then never touch the table (0.1 s for a million). Its condition names
-- 'paused' too: paused deliveries are waiting ones, and count.
CREATE INDEX IF NOT EXISTS deliveries_queued ON deliveries (target, status, created_at)
	WHERE (status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused');
