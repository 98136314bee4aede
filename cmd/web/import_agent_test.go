package main

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/agentimport/agenttest"
	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/testenv"
)

// import-agent --help lists its own flags only; --from is required and must
// be a SQL Server; a server it cannot reach is named without the DSN's
// password.
func TestImportAgentFlags(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"import-agent", "--help"}, envOf(nil), &out, &errOut))
	help := errOut.String()
	for _, f := range []string{"-from", "-time-zone", "-dry-run", "-job", "-target", "-msdb", "-dsn"} {
		require.Contains(t, help, f)
	}
	for _, serveOnly := range []string{"-listen", "-workers", "-operator-token", "-lease"} {
		require.NotContains(t, help, serveOnly)
	}
	errOut.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"import-agent"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "give the Agent's server with --from")
	errOut.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"import-agent", "--from", "postgres://u:p@127.0.0.1/x"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "--from must be a sqlserver:// DSN")
	errOut.Reset()
	store := "sqlite://" + filepath.Join(t.TempDir(), "readpast.db")
	require.Equal(t, 1, run(context.Background(), []string{"import-agent", "--from", "sqlserver://u:Secret9@127.0.0.1:1?database=msdb", "--dsn", store}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "connecting to the SQL Server at 127.0.0.1:1 failed")
	require.NotContains(t, out.String()+errOut.String(), "Secret9")
}

// `readpast import-agent --dry-run` over TDS prints the documents and the
// report of an Agent's jobs (tables of msdb's shape in a test database,
// named with --msdb), two --job flags picking two of them; no run prints
// the DSN's password, not even when the login fails.
func TestImportAgentDryRunOverTDS(t *testing.T) {
	t.Parallel()
	_, database := agenttest.AgentDatabase(t)
	from := agenttest.MasterDSN(t)
	u, err := url.Parse(from)
	require.NoError(t, err)
	password, _ := u.User.Password()
	require.NotEmpty(t, password)

	var out, errOut bytes.Buffer
	args := []string{"import-agent", "--from", from, "--msdb", database, "--time-zone", "UTC", "--dry-run",
		"--job", "nightly-maint", "--job", "export-files"}
	require.Equal(t, 0, run(context.Background(), args, envOf(nil), &out, &errOut), errOut.String())
	got := out.String()
	require.Contains(t, got, `== job "nightly-maint": would be created, paused`)
	require.Contains(t, got, `"on_failure": "step:notify"`)
	require.Contains(t, got, `job "export-files", step 2 "send": not imported: runs in Agent's CmdExec subsystem`)
	require.NotContains(t, got, "weekday-report")
	require.Contains(t, got, "2 Agent jobs read: 1 would be created paused, 1 not imported.")
	require.NotContains(t, got+errOut.String(), password)

	// A zone not at the server's offset is refused, naming the server by
	// host only.
	out.Reset()
	errOut.Reset()
	require.Equal(t, 1, run(context.Background(), []string{"import-agent", "--from", from, "--msdb", database, "--time-zone", "Pacific/Kiritimati", "--dry-run"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "readpast import-agent: the SQL Server at "+u.Host+": the time zone Pacific/Kiritimati is at UTC+14:00 now")
	require.NotContains(t, errOut.String(), password)

	// A login that fails.
	u.User = url.UserPassword(u.User.Username(), "Wrong"+password+"Pw")
	out.Reset()
	errOut.Reset()
	require.Equal(t, 1, run(context.Background(), []string{"import-agent", "--from", u.String(), "--time-zone", "UTC", "--dry-run"}, envOf(nil), &out, &errOut))
	require.NotEmpty(t, errOut.String())
	require.NotContains(t, out.String()+errOut.String(), "Wrong"+password+"Pw")
}

// Without --dry-run the jobs are created in the store --dsn names, paused,
// with the flow the Agent job had, and audited as import-agent's; a second
// import of the same job is refused by name and creates nothing twice.
func TestImportAgentCreatesPausedJobsOverTDS(t *testing.T) {
	t.Parallel()
	_, database := agenttest.AgentDatabase(t)
	from := agenttest.MasterDSN(t)
	store := "sqlite://" + filepath.Join(t.TempDir(), "readpast.db")

	var out, errOut bytes.Buffer
	args := []string{"import-agent", "--from", from, "--msdb", database, "--time-zone", "UTC", "--dsn", store, "--job", "nightly-maint"}
	require.Equal(t, 0, run(context.Background(), args, envOf(nil), &out, &errOut), errOut.String()+out.String())

	s := testenv.OpenStore(t, store, queue.Options{})
	j, err := s.GetJob(context.Background(), "nightly-maint")
	require.NoError(t, err, out.String())
	require.False(t, j.Enabled, "an imported job is paused")
	require.Len(t, j.Steps, 3)
	require.Equal(t, "notify", j.Steps[j.Steps[0].OnFailure].Name, "the first step's failure goes to notify, as in Agent")
	audit := testenv.QueryStrings(t, testenv.SQLite, store, "SELECT actor || ' ' || action FROM readpast_audit ORDER BY id")
	require.Contains(t, audit, "import-agent create_job")

	out.Reset()
	errOut.Reset()
	require.Equal(t, 1, run(context.Background(), args, envOf(nil), &out, &errOut), "a job of that name exists: the import says so")
	require.Contains(t, out.String()+errOut.String(), "nightly-maint")
}

// An error that quotes the --from DSN (a driver's parse error may) loses its
// password, given in the user part or as a password parameter.
func TestImportAgentRedactsThePassword(t *testing.T) {
	t.Parallel()
	dsn := "sqlserver://sa:P%40ss%21w0rd@db1:1433?database=msdb"
	require.Equal(t, "bad DSN sqlserver://sa:***@db1:1433 (password ***)", target.Redact("bad DSN sqlserver://sa:P%40ss%21w0rd@db1:1433 (password P@ss!w0rd)", target.Secrets(dsn)))
	require.Equal(t, "no: ***", target.Redact("no: Hunter2", target.Secrets("sqlserver://db1?user+id=sa&password=Hunter2")))
	require.Equal(t, "the SQL Server at db1:1433", serverOf(dsn))
}
