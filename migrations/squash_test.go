package migrations_test

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/testpg"
	"readpast/migrations"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// chain14 is the pre-release migration chain (versions 1-14 of every
// dialect) that the baselines replaced, kept only as the evidence that the
// squash lost nothing.
//
//go:embed testdata/chain14
var chain14 embed.FS

// The baseline of each dialect makes the schema the pre-release chain made:
// one database migrated by the chain's up files, in order, and one by the
// baseline's up file have the same catalog (tables, columns, defaults, checks,
// indexes with their predicates, functions with their bodies and settings).
// The version tables are left out: they differ by design.
func TestBaselineEqualsThePreReleaseChain(t *testing.T) {
	for _, d := range testenv.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			chain := testenv.NewDSN(t, d)
			for _, f := range chainFiles(t, d) {
				b, err := fs.ReadFile(chain14, f)
				require.NoError(t, err)
				testenv.ExecDSN(t, d, chain, string(b))
			}
			baseline := testenv.NewDSN(t, d)
			b, err := fs.ReadFile(migrations.FS, string(d)+"/000001_baseline.up.sql")
			require.NoError(t, err)
			testenv.ExecDSN(t, d, baseline, string(b))

			want, got := catalog(t, d, chain), catalog(t, d, baseline)
			require.NotEmpty(t, got)
			if want != got {
				t.Fatalf("the baseline's catalog differs from the chain's:\n%s", diffLines(want, got))
			}
		})
	}
}

// chainFiles lists the chain's up files of dialect d in version order.
func chainFiles(t *testing.T, d testenv.Dialect) []string {
	dir := "testdata/chain14/" + string(d)
	entries, err := fs.ReadDir(chain14, dir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".up.sql") {
			files = append(files, dir+"/"+e.Name())
		}
	}
	sort.Strings(files)
	require.Len(t, files, 14)
	return files
}

// catalog renders the schema of the database at dsn as sorted text lines.
func catalog(t *testing.T, d testenv.Dialect, dsn string) string {
	t.Helper()
	var lines []string
	switch d {
	case testenv.SQLite:
		lines = sqliteCatalog(t, dsn)
	case testenv.Postgres:
		lines = postgresCatalog(t, dsn)
	case testenv.SQLServer:
		lines = sqlServerCatalog(t, dsn)
	}
	var kept []string
	for _, l := range lines {
		if !strings.Contains(l, migrations.Table) && !strings.Contains(l, migrations.LegacyTable) {
			kept = append(kept, l)
		}
	}
	sort.Strings(kept)
	return strings.Join(kept, "\n")
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	space      = regexp.MustCompile(`\s+`)
	punctSpace = regexp.MustCompile(`\s*([(),])\s*`)
)

// sqliteCatalog: every object's definition as SQLite keeps it (comments and
// spacing normalised: an ALTER TABLE ADD COLUMN rewrites the table's text),
// and each table's columns and each index's columns as SQLite reads them.
func sqliteCatalog(t *testing.T, dsn string) []string {
	lines := testenv.QueryStrings(t, testenv.SQLite, dsn,
		`SELECT type || ' ' || name || ' on ' || tbl_name || ': ' || coalesce(sql, '') FROM sqlite_schema`)
	for i, l := range lines {
		l = sqlComment.ReplaceAllString(l, " ")
		l = punctSpace.ReplaceAllString(space.ReplaceAllString(l, " "), "$1")
		lines[i] = strings.TrimSpace(l)
	}
	lines = append(lines, testenv.QueryStrings(t, testenv.SQLite, dsn,
		`SELECT 'column ' || m.name || '.' || p.cid || ' ' || p.name || ' ' || p.type || ' notnull=' || p."notnull" ||
		        ' default=' || coalesce(p.dflt_value, 'NULL') || ' pk=' || p.pk
		   FROM sqlite_schema m, pragma_table_info(m.name) p WHERE m.type = 'table'`)...)
	lines = append(lines, testenv.QueryStrings(t, testenv.SQLite, dsn,
		`SELECT 'index column ' || m.tbl_name || '.' || m.name || '.' || x.seqno || ' ' || coalesce(x.name, '<rowid>') || ' desc=' || x."desc" || ' key=' || x."key"
		   FROM sqlite_schema m, pragma_index_xinfo(m.name) x WHERE m.type = 'index'`)...)
	return lines
}

// postgresCatalog: pg_dump --schema-only, less its comments, settings and
// blank lines; function bodies are compared as written.
func postgresCatalog(t *testing.T, dsn string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testpg.Shared(t).Tool("pg_dump"),
		"--schema-only", "--no-owner", "--no-privileges", "--dbname", dsn).CombinedOutput()
	require.NoError(t, err, "pg_dump: %s", out)
	// Statements, not lines: a function's body stays one entry, so sorting
	// keeps its lines in order.
	var stmts []string
	var cur strings.Builder
	for _, l := range strings.Split(string(out), "\n") {
		// (pg_dump's \restrict lines carry a random key.)
		if l == "" || strings.HasPrefix(l, "--") || strings.HasPrefix(l, "SET ") || strings.HasPrefix(l, `\`) ||
			strings.HasPrefix(l, "SELECT pg_catalog.set_config") {
			continue
		}
		cur.WriteString(l)
		cur.WriteByte('\n')
		if strings.HasSuffix(l, ";") && !inDollarQuote(cur.String()) {
			stmts = append(stmts, cur.String())
			cur.Reset()
		}
	}
	require.Zero(t, cur.Len(), "pg_dump's output ended inside a statement")
	return stmts
}

// inDollarQuote reports whether s ends inside a $$ quoted body.
func inDollarQuote(s string) bool { return strings.Count(s, "$$")%2 == 1 }

// sqlServerCatalog: the catalog views a DBA reviews: tables and their
// options, columns, defaults, checks, indexes with filters and their columns,
// and module definitions.
func sqlServerCatalog(t *testing.T, dsn string) []string {
	q := func(query string) []string { return testenv.QueryStrings(t, testenv.SQLServer, dsn, query) }
	var lines []string
	lines = append(lines, q(`SELECT CONCAT('object ', o.type, ' ', o.name, ' on ', OBJECT_NAME(o.parent_object_id))
		FROM sys.objects AS o WHERE o.is_ms_shipped = 0 AND o.type IN ('U', 'PK', 'UQ', 'C', 'P', 'FN', 'IF', 'TF', 'V', 'TR');`)...)
	lines = append(lines, q(`SELECT CONCAT('table ', t.name, ' lock_escalation=', t.lock_escalation_desc,
		' lob_out_of_row=', t.large_value_types_out_of_row) FROM sys.tables AS t WHERE t.is_ms_shipped = 0;`)...)
	lines = append(lines, q(`SELECT CONCAT('column ', OBJECT_NAME(c.object_id), '.', c.column_id, ' ', c.name, ' ', TYPE_NAME(c.user_type_id),
		'(', c.max_length, ',', c.precision, ',', c.scale, ') null=', c.is_nullable, ' identity=', c.is_identity)
		FROM sys.columns AS c JOIN sys.tables AS t ON t.object_id = c.object_id WHERE t.is_ms_shipped = 0;`)...)
	// A default by its column, and by its name too on SQL Server: Babelfish
	// names every default DF_<table>_<oid> whatever the CONSTRAINT clause says.
	name := "d.name"
	if testenv.IsBabelfish(t, dsn) {
		name = "N''"
	}
	lines = append(lines, q(`SELECT CONCAT('default ', OBJECT_NAME(d.parent_object_id), '.', COL_NAME(d.parent_object_id, d.parent_column_id),
		' ', `+name+`, ': ', d.definition) FROM sys.default_constraints AS d;`)...)
	lines = append(lines, q(`SELECT CONCAT('check ', c.name, ' on ', OBJECT_NAME(c.parent_object_id), ': ', c.definition)
		FROM sys.check_constraints AS c;`)...)
	lines = append(lines, q(`SELECT CONCAT('index ', OBJECT_NAME(i.object_id), '.', i.name, ' type=', i.type_desc, ' unique=', i.is_unique,
		' pk=', i.is_primary_key, ' filter=', COALESCE(i.filter_definition, N''))
		FROM sys.indexes AS i JOIN sys.tables AS t ON t.object_id = i.object_id WHERE t.is_ms_shipped = 0 AND i.name IS NOT NULL;`)...)
	lines = append(lines, q(`SELECT CONCAT('index column ', OBJECT_NAME(ic.object_id), '.', i.name, ' ', ic.key_ordinal, ' ',
		COL_NAME(ic.object_id, ic.column_id), ' included=', ic.is_included_column, ' desc=', ic.is_descending_key)
		FROM sys.index_columns AS ic JOIN sys.indexes AS i ON i.object_id = ic.object_id AND i.index_id = ic.index_id
		JOIN sys.tables AS t ON t.object_id = i.object_id WHERE t.is_ms_shipped = 0;`)...)
	lines = append(lines, q(`SELECT CONCAT('module ', OBJECT_NAME(m.object_id), ': ', m.definition)
		FROM sys.sql_modules AS m JOIN sys.objects AS o ON o.object_id = m.object_id WHERE o.is_ms_shipped = 0;`)...)
	return lines
}

// diffLines lists the lines only one side has.
func diffLines(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for l := range w {
		if !g[l] {
			fmt.Fprintf(&b, "- chain only:    %s\n", l)
		}
	}
	for l := range g {
		if !w[l] {
			fmt.Fprintf(&b, "+ baseline only: %s\n", l)
		}
	}
	return b.String()
}
