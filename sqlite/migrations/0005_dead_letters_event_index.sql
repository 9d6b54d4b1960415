-- Deleting an event (the retention sweep forgetting dedupe keys) cascades
-- to its dead letters through dead_letters.event, which nothing indexed:
-- every deleted event scanned the whole dead-letter table inside the
-- writer, and with thousands of dead letters a sweep batch held every ack
-- for seconds. Every foreign key's column now has an index (the store
-- tests check it).
CREATE INDEX IF NOT EXISTS dead_letters_event ON dead_letters (event);
