// Package agenttest gives tests a SQL Server Agent to import from: a test
// database on the server READPAST_TEST_MSSQL_DSN names, holding tables of
// msdb's shape filled with a few jobs.
package agenttest

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue/sqlserver"
	"readpast/internal/testenv"
)

// msdbShape creates Agent's five tables with msdb's column names and types
// (Microsoft's pages for dbo.sysjobs, sysjobsteps, sysjobschedules,
// sysschedules and syscategories). The DEFAULTs only shorten the inserts
// below; the reader names every column it reads.
const msdbShape = `
CREATE TABLE dbo.syscategories (
    category_id int IDENTITY NOT NULL PRIMARY KEY, category_class int NOT NULL DEFAULT 1,
    category_type tinyint NOT NULL DEFAULT 1, name sysname NOT NULL);
CREATE TABLE dbo.sysjobs (
    job_id uniqueidentifier NOT NULL PRIMARY KEY, originating_server_id int NOT NULL DEFAULT 0,
    name sysname NOT NULL, enabled tinyint NOT NULL, description nvarchar(512) NULL,
    start_step_id int NOT NULL, category_id int NOT NULL, owner_sid varbinary(85) NOT NULL DEFAULT 0x01,
    notify_level_eventlog int NOT NULL DEFAULT 2, notify_level_email int NOT NULL DEFAULT 0,
    notify_level_netsend int NOT NULL DEFAULT 0, notify_level_page int NOT NULL DEFAULT 0,
    notify_email_operator_id int NOT NULL DEFAULT 0, notify_netsend_operator_id int NOT NULL DEFAULT 0,
    notify_page_operator_id int NOT NULL DEFAULT 0, delete_level int NOT NULL DEFAULT 0,
    date_created datetime NOT NULL DEFAULT GETDATE(), date_modified datetime NOT NULL DEFAULT GETDATE(),
    version_number int NOT NULL DEFAULT 1);
CREATE TABLE dbo.sysjobsteps (
    job_id uniqueidentifier NOT NULL, step_id int NOT NULL, step_name sysname NOT NULL,
    subsystem nvarchar(40) NOT NULL, command nvarchar(max) NULL, flags int NOT NULL DEFAULT 0,
    additional_parameters ntext NULL, cmdexec_success_code int NOT NULL DEFAULT 0,
    on_success_action tinyint NOT NULL, on_success_step_id int NOT NULL DEFAULT 0,
    on_fail_action tinyint NOT NULL, on_fail_step_id int NOT NULL DEFAULT 0, server sysname NULL,
    database_name sysname NULL, database_user_name sysname NULL, retry_attempts int NOT NULL DEFAULT 0,
    retry_interval int NOT NULL DEFAULT 0, os_run_priority int NOT NULL DEFAULT 0,
    output_file_name nvarchar(200) NULL, last_run_outcome int NOT NULL DEFAULT 0,
    last_run_duration int NOT NULL DEFAULT 0, last_run_retries int NOT NULL DEFAULT 0,
    last_run_date int NOT NULL DEFAULT 0, last_run_time int NOT NULL DEFAULT 0, proxy_id int NULL,
    step_uid uniqueidentifier NULL);
CREATE TABLE dbo.sysschedules (
    schedule_id int IDENTITY NOT NULL PRIMARY KEY, schedule_uid uniqueidentifier NOT NULL DEFAULT NEWID(),
    originating_server_id int NOT NULL DEFAULT 0, name sysname NOT NULL,
    owner_sid varbinary(85) NOT NULL DEFAULT 0x01, enabled int NOT NULL, freq_type int NOT NULL,
    freq_interval int NOT NULL, freq_subday_type int NOT NULL, freq_subday_interval int NOT NULL,
    freq_relative_interval int NOT NULL, freq_recurrence_factor int NOT NULL,
    active_start_date int NOT NULL, active_end_date int NOT NULL, active_start_time int NOT NULL,
    active_end_time int NOT NULL, date_created datetime NOT NULL DEFAULT GETDATE(),
    date_modified datetime NOT NULL DEFAULT GETDATE(), version_number int NOT NULL DEFAULT 1);
CREATE TABLE dbo.sysjobschedules (
    schedule_id int NOT NULL, job_id uniqueidentifier NOT NULL,
    next_run_date int NOT NULL DEFAULT 0, next_run_time int NOT NULL DEFAULT 0);
`

// agentJobs are three jobs as Agent would store them: a three-step
// maintenance job with a failure branch (go to step 3), retries and a
// database per step, on three schedules (daily at 01:00; every 3 weeks;
// every 45 minutes from 08:00 to 10:00); an export job whose second step is
// CmdExec, on the first Monday of the month; and a report job that shares
// the daily schedule, has a disabled schedule, and uses an Agent token.
const agentJobs = `
INSERT INTO dbo.syscategories (name) VALUES (N'[Uncategorized (Local)]'), (N'Database Maintenance');
INSERT INTO dbo.sysjobs (job_id, name, enabled, description, start_step_id, category_id, notify_level_email) VALUES
 ('11111111-1111-1111-1111-111111111111', N'nightly-maint', 1, N'checks, then rebuilds', 1, 2, 2),
 ('22222222-2222-2222-2222-222222222222', N'export-files', 1, NULL, 1, 1, 0),
 ('33333333-3333-3333-3333-333333333333', N'weekday-report', 0, N'No description available.', 1, 1, 0);
INSERT INTO dbo.sysjobsteps (job_id, step_id, step_name, subsystem, command, on_success_action, on_success_step_id,
    on_fail_action, on_fail_step_id, database_name, retry_attempts, retry_interval) VALUES
 ('11111111-1111-1111-1111-111111111111', 1, N'check', N'TSQL', N'DBCC CHECKDB(Ops) WITH NO_INFOMSGS', 3, 0, 4, 3, N'Ops', 0, 0),
 ('11111111-1111-1111-1111-111111111111', 2, N'rebuild', N'TSQL', N'EXEC dbo.rebuild_indexes', 1, 0, 4, 3, N'Ops', 2, 5),
 ('11111111-1111-1111-1111-111111111111', 3, N'notify', N'TSQL', N'INSERT INTO dbo.maint_failures DEFAULT VALUES', 2, 0, 2, 0, N'DBA', 0, 0),
 ('22222222-2222-2222-2222-222222222222', 1, N'extract', N'TSQL', N'EXEC dbo.extract_orders', 3, 0, 2, 0, N'Sales', 0, 0),
 ('22222222-2222-2222-2222-222222222222', 2, N'send', N'CmdExec', N'copy D:\out\orders.csv \\files\in', 1, 0, 2, 0, NULL, 0, 0),
 ('33333333-3333-3333-3333-333333333333', 1, N'report', N'TSQL', N'EXEC dbo.report @job = $(ESCAPE_SQUOTE(JOBID))', 1, 0, 2, 0, NULL, 1, 1);
INSERT INTO dbo.sysschedules (name, enabled, freq_type, freq_interval, freq_subday_type, freq_subday_interval,
    freq_relative_interval, freq_recurrence_factor, active_start_date, active_end_date, active_start_time, active_end_time) VALUES
 (N'daily 01:00', 1, 4, 1, 1, 0, 0, 0, 20200101, 99991231, 10000, 235959),
 (N'every third Monday', 1, 8, 2, 1, 0, 0, 3, 20200101, 99991231, 20000, 235959),
 (N'office hours', 1, 4, 1, 4, 45, 0, 0, 20200101, 99991231, 80000, 100000),
 (N'first Monday', 1, 32, 2, 1, 0, 1, 1, 20200101, 99991231, 30000, 235959),
 (N'old', 0, 8, 62, 1, 0, 0, 1, 20200101, 99991231, 70000, 235959);
INSERT INTO dbo.sysjobschedules (schedule_id, job_id) VALUES
 (1, '11111111-1111-1111-1111-111111111111'), (2, '11111111-1111-1111-1111-111111111111'),
 (3, '11111111-1111-1111-1111-111111111111'), (4, '22222222-2222-2222-2222-222222222222'),
 (1, '33333333-3333-3333-3333-333333333333'), (5, '33333333-3333-3333-3333-333333333333');
`

// AgentDatabase creates a test database holding tables of msdb's shape
// filled with agentJobs, and returns a pool on the server's master database
// (as the import connects) and the test database's name.
func AgentDatabase(t *testing.T) (*sql.DB, string) {
	t.Helper()
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " is not set: no SQL Server to read Agent's tables from")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testenv.NewDSN(t, testenv.SQLServer)
	test := OpenMSSQL(t, dsn)
	var name string
	require.NoError(t, test.QueryRowContext(ctx, "SELECT DB_NAME();").Scan(&name))
	for _, batch := range []string{msdbShape, agentJobs} {
		_, err := test.ExecContext(ctx, batch)
		require.NoError(t, err)
	}
	require.NoError(t, test.Close())
	return OpenMSSQL(t, MasterDSN(t)), name
}

// OpenMSSQL opens a pool on dsn, closed when t ends.
func OpenMSSQL(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	c, err := mssql.NewConnector(dsn)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

// MasterDSN is READPAST_TEST_MSSQL_DSN pointed at master, as an import
// connects to the Agent's server.
func MasterDSN(t *testing.T) string {
	t.Helper()
	dsn, err := sqlserver.DSNWithDatabase(os.Getenv(testenv.MSSQLDSNEnv), "master")
	require.NoError(t, err)
	return dsn
}
