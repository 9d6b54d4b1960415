-- Why a delivery went dead before it had spent its attempts: a permanent
-- failure the target reported ("permanent: exit 65", "permanent: status
-- 410"), a payload retention removed, a target the config no longer names.
-- Empty for one that spent them all, and once revived or replayed. Kept on
-- the delivery, not derived from its last attempt: whether an HTTP status
-- is permanent depends on the target's permanent_status at that time,
-- which the config may no longer say.
ALTER TABLE deliveries ADD COLUMN dead_reason TEXT NOT NULL DEFAULT '';
