package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/agentimport"
	"readpast/internal/dialect"
	"readpast/internal/sqlrun"
	"readpast/internal/target"
)

// importAgentCmd is `readpast import-agent --from DSN [--time-zone Z]
// [--dry-run] [--job NAME ...]`: the SQL Server Agent jobs of the server at
// DSN, as paused ReadPast jobs (docs/JOBS.md, "Import from SQL Server Agent").
// Exit status 2 for bad flags, 1 when the import failed or a job could not be
// created.
func importAgentCmd(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("readpast import-agent", flag.ContinueOnError)
	fs.SetOutput(errOut)
	from := fs.String("from", "", "the SQL Server whose Agent jobs to import, a `DSN` sqlserver://user:password@host:port (the login needs SELECT on msdb's Agent tables)")
	msdb := fs.String("msdb", "msdb", "the `database` holding Agent's tables on that server (another name for a restored copy of msdb)")
	zone := fs.String("time-zone", "", "the server's IANA time `zone`, e.g. Europe/Paris (default: asked of the server, SQL Server 2022 and later)")
	dryRun := fs.Bool("dry-run", false, "print the jobs it would create, as POST /api/jobs documents, and the report; create nothing")
	var jobs names
	fs.Var(&jobs, "job", "import only the Agent job of this `name` (repeat for several; default all)")
	targetName := fs.String("target", "", "the named `target` the steps run on (default the node's target)")
	dsn := fs.String("dsn", getenv("READPAST_DSN"), "the ReadPast store the jobs are created in (env READPAST_DSN; not used with --dry-run)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: readpast import-agent --from DSN [--time-zone Z] [--dry-run] [--job NAME ...]\n\n"+
			"Reads the SQL Server Agent jobs of the server at --from and creates them in ReadPast, paused.\n"+
			"What ReadPast cannot do as Agent does is reported line by line and not imported (docs/JOBS.md).\n\nFlags:\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, args ...any) int {
		fmt.Fprintf(errOut, "readpast import-agent: "+format+"\n", args...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q: give the Agent's server with --from", fs.Arg(0))
	}
	if *from == "" {
		return bad("give the Agent's server with --from sqlserver://user:password@host:port")
	}
	if d, _, err := dialect.Parse(*from); err != nil || d != dialect.SQLServer {
		return bad("--from must be a sqlserver:// DSN: SQL Server Agent lives in SQL Server")
	}

	err := importAgent(ctx, *from, *dryRun, *dsn, agentimport.Config{Database: *msdb, TimeZone: *zone, Target: *targetName, Jobs: jobs}, out)
	if err != nil {
		fmt.Fprintln(errOut, "readpast import-agent:", target.Redact(err.Error(), target.Secrets(*from)))
		return 1
	}
	return 0
}

// importAgent reads the Agent's jobs and prints them (dryRun) or creates them.
func importAgent(ctx context.Context, from string, dryRun bool, storeDSN string, cfg agentimport.Config, out io.Writer) error {
	var creator agentimport.JobCreator
	if !dryRun {
		c, closeStore, err := jobsInStore(ctx, storeDSN)
		if err != nil {
			return err
		}
		defer closeStore()
		creator = c
	}
	connector, err := mssql.NewConnector(from)
	if err != nil {
		return fmt.Errorf("--from cannot be read as a SQL Server DSN: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connecting to %s failed (check the login, password and host of --from): %w", serverOf(from), sqlrun.DescribeMSSQL(err))
	}
	plan, err := agentimport.Load(ctx, db, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", serverOf(from), err)
	}
	if dryRun {
		return plan.Write(out)
	}
	return plan.Create(ctx, creator, out)
}

// serverOf names the server of a sqlserver:// DSN for messages: its host
// and port, never its login or password.
func serverOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Host != "" {
		return "the SQL Server at " + u.Host
	}
	return "the SQL Server of --from"
}

// names is a repeatable string flag.
type names []string

func (n *names) String() string { return strings.Join(*n, ", ") }
func (n *names) Set(v string) error {
	if v == "" {
		return errors.New("a job name is not empty")
	}
	*n = append(*n, v)
	return nil
}
