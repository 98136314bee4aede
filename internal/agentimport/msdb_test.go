package agentimport

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/agentimport/agenttest"
	"readpast/internal/testenv"
)

// The reader, over TDS, reads Agent's tables by their three-part names in
// the database it is given (msdb in production): every job with its
// category, its steps in order and the schedules attached to it, a schedule
// shared by two jobs read for each.
func TestReadAgentTablesOverTDS(t *testing.T) {
	t.Parallel()
	db, database := agenttest.AgentDatabase(t)
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
	db, database := agenttest.AgentDatabase(t)
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
		`"time_zone": "UTC",
      "misfire": "skip"`,
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
	db := agenttest.OpenMSSQL(t, dsn)
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
