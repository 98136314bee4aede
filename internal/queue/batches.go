package queue

import (
	"bufio"
	"strings"
)

// SplitGo splits a script into batches on lines that hold only GO (any case,
// surrounding blanks allowed), the sqlcmd convention, for dialects other than
// T-SQL (the sqlserver package uses go-mssqldb's batch package instead).
// Batches that are only white space are dropped; a script without GO lines is
// one batch.
func SplitGo(script string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := cur.String(); strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(script))
	sc.Buffer(make([]byte, 0, 64*1024), len(script)+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.EqualFold(strings.TrimSpace(line), "go") {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return out
}
