-- The queue's figures by target (metrics: hookbox_deliveries{target,status},
-- hookbox_oldest_queued_seconds{target}) and the admission budget ([store]
-- max_queued) count the waiting deliveries, paused ones included, by
-- target and status, and date each target's oldest: this index covers
-- both, so that a count reads the index and never the table. Counting
-- stays a read that grows with the queue (0.1 s for a million waiting on
-- a quiet 2-core machine): the metrics answer a scrape with the last
-- figures while a slow count runs in the background, and the budget reads
-- it less often the longer it takes. Counters kept by triggers would make
-- each read free but cost every claim and completion about a tenth more.
CREATE INDEX deliveries_waiting ON deliveries (target, status, created_at)
	WHERE (status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused');
