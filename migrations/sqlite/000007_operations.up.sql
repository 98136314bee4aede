-- Bulk operations (docs/QUEUE.md, "Bulk operations"): a request to cancel,
-- retry or delete every task of a selection, kept here so that whichever node
-- holds its lease advances it in batches by a keyset cursor and another node
-- takes it over when that one stops. The tasks change one short transaction
-- each; this row records how far it got.
CREATE TABLE readpast_bulk_ops (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    action           TEXT NOT NULL CHECK (action IN ('cancel', 'retry', 'delete')),
    selection        TEXT NOT NULL,            -- JSON: {"filter": {...}} or {"ids": [...]}
    matched          INTEGER NOT NULL DEFAULT 0, -- the bounded count when asked
    done             INTEGER NOT NULL DEFAULT 0,
    skipped          INTEGER NOT NULL DEFAULT 0,
    cursor_id        INTEGER NOT NULL,           -- the next batch reads ids below it
    created_at       INTEGER NOT NULL,
    created_by       TEXT NOT NULL,
    lease_owner      TEXT,
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    error            TEXT NOT NULL DEFAULT ''
);
-- Claimers read the unfinished ones only.
CREATE INDEX readpast_bulk_ops_open ON readpast_bulk_ops (id) WHERE finished_at IS NULL;

-- A task's optional name (at most 200 characters), shown instead of the
-- body's first line and searched with the body. Not indexed: the text search
-- reads a window of the list's indexes (docs/QUEUE.md, "Text search").
ALTER TABLE readpast_tasks ADD COLUMN name TEXT;
