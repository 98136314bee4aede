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

-- A task's optional name (at most 200 characters), shown instead of the
-- body's first line and searched with the body. Not indexed: the text search
-- reads a window of the list's indexes (docs/QUEUE.md, "Text search"). Last
-- in the row, as readpast_claim returns the row type; adding a nullable
-- column without a default rewrites nothing.
ALTER TABLE readpast_tasks ADD COLUMN name text;
