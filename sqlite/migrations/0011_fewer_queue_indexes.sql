-- Two indexes written with every delivery go: deliveries_waiting (0010),
-- which every enqueue, claim and completion rewrote, and
-- deliveries_finished (0009), which every completion added to. Together
-- they cost each delivery about a tenth of the writer's time
-- (BENCHMARKS.md, "The queue's own indexes"). What read them reads what
-- the queue keeps anyway: the metrics' and the budget's counts go through
-- deliveries_due and deliveries_paused, receive-to-done through the
-- attempts (appended in time order, their rowid searched by time), and a
-- target's last success is kept by the store as its deliveries complete.
DROP INDEX deliveries_waiting;
DROP INDEX deliveries_finished;
