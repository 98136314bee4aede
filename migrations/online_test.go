package migrations

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"readpast/internal/dialect"
)

// An index built after the baseline is built on a populated table, and an
// offline build holds a shared lock on the table (a Sch-M lock for a
// clustered index) for the whole build, stopping every claim and finish
// (docs/SQLSERVER.md, "Index builds in migrations"). Every SQL Server up
// migration after the baseline that builds an index must use the online
// option where the edition has it: the detection in docs/SQLSERVER.md
// (SERVERPROPERTY('EngineEdition')), which this test recognises by its
// ONLINE = ON and EngineEdition, and a header that says what the offline
// build blocks. No migration does today; this keeps the next one honest.
func TestSQLServerIndexBuildsAreOnlineWhereTheEditionAllows(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(FS, string(dialect.SQLServer)+"/*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`(?i)\bCREATE\s+(UNIQUE\s+)?((NON)?CLUSTERED\s+)?INDEX\b|\bALTER\s+INDEX\b.*\bREBUILD\b`)
	for _, f := range files {
		if strings.Contains(f, "000001_baseline") {
			continue // empty tables: nothing to block
		}
		b, err := fs.ReadFile(FS, f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !build.MatchString(text) || onlyNewTables(text) {
			continue
		}
		if !strings.Contains(text, "ONLINE = ON") || !strings.Contains(text, "EngineEdition") {
			t.Errorf("%s builds an index without the online option where the edition allows it (docs/SQLSERVER.md, \"Index builds in migrations\")", f)
		}
		if !strings.Contains(strings.ToLower(text), "offline build blocks") {
			t.Errorf("%s: its header must say what an offline build blocks (\"offline build blocks ...\")", f)
		}
	}
}

// onlyNewTables reports whether every index a migration builds is on a table
// the same migration creates: an empty table, so an offline build blocks
// nothing.
func onlyNewTables(text string) bool {
	on := regexp.MustCompile(`(?i)\bINDEX\s+\w+\s+ON\s+([\w.]+)`)
	for _, m := range on.FindAllStringSubmatch(text, -1) {
		if !regexp.MustCompile(`(?i)\bCREATE\s+TABLE\s+` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(text) {
			return false
		}
	}
	return !regexp.MustCompile(`(?i)\bALTER\s+INDEX\b`).MatchString(text)
}
