package agentimport

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
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

// agentDatabase creates a test database holding tables of msdb's shape
// filled with agentJobs, and returns a pool on the server's master database
// (as the import connects) and the test database's name.
func agentDatabase(t *testing.T) (*sql.DB, string) {
	t.Helper()
	if os.Getenv(testenv.MSSQLDSNEnv) == "" {
		t.Skip(testenv.MSSQLDSNEnv + " is not set: no SQL Server to read Agent's tables from")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testenv.NewDSN(t, testenv.SQLServer)
	test := openMSSQL(t, dsn)
	var name string
	require.NoError(t, test.QueryRowContext(ctx, "SELECT DB_NAME();").Scan(&name))
	for _, batch := range []string{msdbShape, agentJobs} {
		_, err := test.ExecContext(ctx, batch)
		require.NoError(t, err)
	}
	require.NoError(t, test.Close())
	master, err := sqlserver.DSNWithDatabase(os.Getenv(testenv.MSSQLDSNEnv), "master")
	require.NoError(t, err)
	return openMSSQL(t, master), name
}

func openMSSQL(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	c, err := mssql.NewConnector(dsn)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

// The reader, over TDS, reads Agent's tables by their three-part names in
// the database it is given (msdb in production): every job with its
// category, its steps in order and the schedules attached to it, a schedule
// shared by two jobs read for each.
func TestReadAgentTablesOverTDS(t *testing.T) {
	t.Parallel()
	db, database := agentDatabase(t)
	ctx := context.Background()
	jobs, err := Read(ctx, db, database)
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	names := []string{jobs[0].Name, jobs[1].Name, jobs[2].Name}
	require.Equal(t, []string{"export-files", "nightly-maint", "weekday-report"}, names, "by name")

	m := jobs[1]
	require.Equal(t, "Database Maintenance", m.Category)
	require.Equal(t, "checks, then rebuilds", m.Description)
	require.True(t, m.Enabled)
	require.Equal(t, 2, m.NotifyEmail)
	require.Len(t, m.Steps, 3)
	require.Equal(t, Step{ID: 2, Name: "rebuild", Subsystem: "TSQL", Command: "EXEC dbo.rebuild_indexes", Database: "Ops",
		OnSuccessAction: 1, OnFailAction: 4, OnFailStepID: 3, RetryAttempts: 2, RetryInterval: 5}, m.Steps[1])
	require.Len(t, m.Schedules, 3)
	require.Equal(t, Schedule{ID: 3, Name: "office hours", Enabled: true, FreqType: 4, FreqInterval: 1, FreqSubdayType: 4,
		FreqSubdayInterval: 45, ActiveStartDate: 20200101, ActiveEndDate: 99991231, ActiveStartTime: 80000, ActiveEndTime: 100000}, m.Schedules[2])

	require.Equal(t, `copy D:\out\orders.csv \\files\in`, jobs[0].Steps[1].Command)
	require.Equal(t, "CmdExec", jobs[0].Steps[1].Subsystem)
	require.Empty(t, jobs[0].Description, "NULL description")
	require.False(t, jobs[2].Enabled)
	require.Len(t, jobs[2].Schedules, 2)
	require.Equal(t, "daily 01:00", jobs[2].Schedules[0].Name, "the schedule nightly-maint shares")

	_, err = Read(ctx, db, database+"_missing")
	require.ErrorContains(t, err, "reading SQL Server Agent's sysjobs failed")
}

// The whole import over TDS, as --dry-run prints it: the documents of the
// jobs that convert (paused, flow by step name, USE batches, the schedules
// cron expresses, in the zone given), and the report's lines for what does
// not: the CmdExec step (and so its job), every third Monday, the first
// Monday of the month, the disabled schedule, and the Agent token.
func TestImportPlanOverTDS(t *testing.T) {
	t.Parallel()
	db, database := agentDatabase(t)
	ctx := context.Background()
	p, err := Load(ctx, db, Config{Database: database, TimeZone: "UTC", Target: "agent"})
	require.NoError(t, err)
	require.Equal(t, "UTC", p.Clock.Zone)
	require.Equal(t, 2, p.Importable())

	var out bytes.Buffer
	require.NoError(t, p.Write(&out))
	got := out.String()
	for _, want := range []string{
		"SQL Server Agent's server: time zone UTC (UTC+00:00 now), date ",
		`== job "export-files": not imported`,
		`job "export-files", step 2 "send": not imported: runs in Agent's CmdExec subsystem (an operating-system command), not T-SQL`,
		`job "export-files", schedule "first Monday": not imported: runs on the first Monday of the month: cron here cannot say it`,
		`== job "nightly-maint": would be created, paused`,
		`"body": "USE [Ops];\nGO\nDBCC CHECKDB(Ops) WITH NO_INFOMSGS",`,
		`"body": "USE [DBA];\nGO\nINSERT INTO dbo.maint_failures DEFAULT VALUES",`,
		`"on_failure": "step:notify"`,
		`"retry_interval": "5m"`,
		`"target": "agent"`,
		`"cron": "0 1 * * *"`,
		`"cron": "0,45 8 * * *"`,
		`"cron": "30 9 * * *"`,
		`"time_zone": "UTC"`,
		`job "nightly-maint", schedule "every third Monday": not imported: runs every 3 weeks on Monday: cron has no week counter`,
		`job "nightly-maint", schedule "office hours": check: fires at minutes that differ from hour to hour, so it became 2 cron schedules`,
		`job "nightly-maint": check: e-mails an Agent operator when it fails`,
		`== job "weekday-report": would be created, paused`,
		`job "weekday-report", step 1 "report": check: uses Agent's token $(ESCAPE_SQUOTE(JOBID))`,
		`job "weekday-report", schedule "old": not imported: is disabled in Agent`,
		`job "weekday-report": check: is disabled in Agent`,
		"3 Agent jobs read: 2 would be created paused, 1 not imported.",
	} {
		require.Contains(t, got, want)
	}
	require.Equal(t, 2, strings.Count(got, `"enabled": false`))
	require.NotContains(t, got, "copy D:", "the CmdExec step's job is not printed as a document")

	// --job picks jobs by name; a name that is no job is reported.
	p, err = Load(ctx, db, Config{Database: database, TimeZone: "UTC", Jobs: []string{"weekday-report", "no-such-job"}})
	require.NoError(t, err)
	require.Len(t, p.Jobs, 1)
	require.Equal(t, "weekday-report", p.Jobs[0].Job)
	require.Equal(t, []string{`not imported: --job "no-such-job" names no Agent job on this server (names are compared exactly)`}, lineStrings(p.Lines))
}

// The server's clock: a zone given with --time-zone must be at the server's
// UTC offset now, since Agent's times are the server's; without one the
// server is asked (CURRENT_TIMEZONE_ID(), SQL Server 2022 on), and a server
// that cannot say is told to give --time-zone.
func TestReadClockOverTDS(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv(testenv.MSSQLDSNEnv)
	if dsn == "" {
		t.Skip(testenv.MSSQLDSNEnv + " is not set")
	}
	db := openMSSQL(t, dsn)
	ctx := context.Background()
	var offset int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT DATEPART(TZOFFSET, SYSDATETIMEOFFSET());").Scan(&offset))

	// A zone that is not at the server's offset now is refused.
	wrong := "Asia/Tokyo"
	if offset == 9*60 {
		wrong = "America/New_York"
	}
	_, err := ReadClock(ctx, db, wrong)
	require.ErrorContains(t, err, "the time zone "+wrong+" is at UTC")
	require.ErrorContains(t, err, "give the server's zone with --time-zone")

	// A zone at the server's offset is taken, with the server's date.
	fixed := "Etc/GMT" + map[bool]string{true: "-", false: "+"}[offset > 0] + strconv.Itoa(abs(offset)/60)
	if offset%60 != 0 {
		t.Skipf("the server's offset %d minutes is no whole hour", offset)
	}
	if offset == 0 {
		fixed = "UTC"
	}
	c, err := ReadClock(ctx, db, fixed)
	require.NoError(t, err)
	require.Equal(t, fixed, c.Zone)
	require.Equal(t, time.Duration(offset)*time.Minute, c.Offset)
	now := time.Now().In(time.FixedZone("", offset*60))
	require.Contains(t, []int{yyyymmdd(now.Add(-time.Minute)), yyyymmdd(now)}, c.Today)

	// Without --time-zone the server is asked.
	c, err = ReadClock(ctx, db, "")
	if testenv.IsBabelfish(t, dsn) {
		require.ErrorContains(t, err, "the server did not say its time zone (CURRENT_TIMEZONE_ID() needs SQL Server 2022")
		require.ErrorContains(t, err, "give it with --time-zone")
		return
	}
	if err != nil {
		require.ErrorContains(t, err, "--time-zone")
		return
	}
	require.NotEmpty(t, c.Zone)
}

func yyyymmdd(t time.Time) int { return t.Year()*10000 + int(t.Month())*100 + t.Day() }

func abs(n int) int { return max(n, -n) }
