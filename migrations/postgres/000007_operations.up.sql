-- Bulk operations (docs/QUEUE.md, "Bulk operations"): a request to cancel,
-- retry or delete every task of a selection, kept here so that whichever node
-- holds its lease advances it in batches by a keyset cursor and another node
-- takes it over when that one stops. The tasks change one short transaction
-- each; this row records how far it got. No plpgsql: nothing to pin.
CREATE TABLE readpast_bulk_ops (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action           text NOT NULL CHECK (action IN ('cancel', 'retry', 'delete')),
    selection        text NOT NULL,              -- JSON: {"filter": {...}} or {"ids": [...]}
    matched          bigint NOT NULL DEFAULT 0,  -- the bounded count when asked
    done             bigint NOT NULL DEFAULT 0,
    skipped          bigint NOT NULL DEFAULT 0,
    cursor_id        bigint NOT NULL,            -- the next batch reads ids below it
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_by       text NOT NULL,
    lease_owner      text,
    lease_token      bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    error            text NOT NULL DEFAULT ''
);
-- Claimers read the unfinished ones only.
CREATE INDEX readpast_bulk_ops_open ON readpast_bulk_ops (id) WHERE finished_at IS NULL;
