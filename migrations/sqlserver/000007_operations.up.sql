-- Bulk operations (docs/QUEUE.md, "Bulk operations"): a request to cancel,
-- retry or delete every task of a selection, kept here so that whichever node
-- holds its lease advances it in batches by a keyset cursor and another node
-- takes it over when that one stops. The tasks change one short transaction
-- each; this row records how far it got.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE dbo.readpast_bulk_ops (
    id               bigint IDENTITY(1,1) NOT NULL CONSTRAINT readpast_bulk_ops_pk PRIMARY KEY CLUSTERED,
    action           varchar(10) NOT NULL CONSTRAINT readpast_bulk_ops_action_ck CHECK (action IN ('cancel', 'retry', 'delete')),
    selection        nvarchar(max) NOT NULL,     -- JSON: {"filter": {...}} or {"ids": [...]}
    matched          bigint NOT NULL CONSTRAINT readpast_bulk_ops_matched_df DEFAULT 0,
    done             bigint NOT NULL CONSTRAINT readpast_bulk_ops_done_df DEFAULT 0,
    skipped          bigint NOT NULL CONSTRAINT readpast_bulk_ops_skipped_df DEFAULT 0,
    cursor_id        bigint NOT NULL,            -- the next batch reads ids below it
    created_at       datetime2(6) NOT NULL CONSTRAINT readpast_bulk_ops_created_df DEFAULT SYSUTCDATETIME(),
    created_by       nvarchar(128) NOT NULL,
    lease_owner      nvarchar(200) NULL,
    lease_token      bigint NOT NULL CONSTRAINT readpast_bulk_ops_token_df DEFAULT 0,
    lease_expires_at datetime2(6) NULL,
    updated_at       datetime2(6) NOT NULL CONSTRAINT readpast_bulk_ops_updated_df DEFAULT SYSUTCDATETIME(),
    finished_at      datetime2(6) NULL,
    error            nvarchar(max) NOT NULL CONSTRAINT readpast_bulk_ops_error_df DEFAULT N''
);
-- Claimers read the unfinished ones only. Built on the table this file
-- creates, empty: the offline build blocks nothing.
CREATE INDEX readpast_bulk_ops_open ON dbo.readpast_bulk_ops (id) WHERE finished_at IS NULL;

-- A task's optional name (at most 200 characters; nvarchar counts UTF-16
-- units, so 400 hold any 200), shown instead of the body's first line and
-- searched with the body. Not indexed: the text search reads a window of the
-- list's indexes (docs/QUEUE.md, "Text search"). A nullable column without a
-- default is a change of metadata only.
ALTER TABLE dbo.readpast_tasks ADD name nvarchar(400) NULL;

COMMIT TRANSACTION;
