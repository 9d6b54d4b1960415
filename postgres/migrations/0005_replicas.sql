-- Several serve replicas on one database.

-- Each claim records the replica that made it, so that a starting replica
-- takes back at once only what its stopped predecessors left running; what
-- a live replica holds waits for that replica, or for its lease. '' for
-- claims made before this migration: they wait for their lease.
ALTER TABLE deliveries ADD COLUMN replica text NOT NULL DEFAULT '';

-- The replicas that started on this database: who ran where, so that a
-- replica on the same machine can tell that one is gone (its pid no longer
-- runs). A replica's row is deleted once its leftovers are taken back.
CREATE TABLE replicas (
	id          text    PRIMARY KEY,
	host        text    NOT NULL,
	pid         integer NOT NULL,
	boot        text    NOT NULL DEFAULT '',   -- the kernel's boot id
	pidns       text    NOT NULL DEFAULT '',   -- the process's pid namespace
	proc_start  bigint  NOT NULL DEFAULT 0,    -- the process's start, in clock ticks after boot
	started_at  bigint  NOT NULL
);

CREATE INDEX replicas_host ON replicas (host);

-- Leader leases: the work that must run on one replica at a time (the
-- retention sweep, the alerts) runs on the holder of its lease, which
-- renews it well before expires_at (the database's clock, in unix
-- milliseconds) and deletes it when it stops.
CREATE TABLE leaders (
	name        text    PRIMARY KEY,
	holder      text    NOT NULL,
	elected_at  bigint  NOT NULL,
	expires_at  bigint  NOT NULL
);
