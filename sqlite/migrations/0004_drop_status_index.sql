-- The first 0001 also indexed deliveries by (status, event); no query uses
-- it (lookups by event go through the (event, target) key), and every claim
-- and completion paid to keep it. 0001 no longer creates it; this drops it
-- from a store made before.
DROP INDEX IF EXISTS deliveries_status;
