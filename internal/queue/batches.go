package queue

import "strings"

// SplitGo splits a script into batches on lines that hold only GO (any case,
// surrounding blanks allowed), the sqlcmd convention, for dialects other than
// T-SQL (the sqlserver package uses go-mssqldb's batch package instead).
// Batches are the script's own text between GO lines, line endings included;
// those that are only white space are dropped, and a script without GO lines is
// one batch. It copies nothing: every task runs through it, on the hot path.
func SplitGo(script string) []string {
	var out []string
	keep := func(b string) {
		if strings.TrimSpace(b) != "" {
			out = append(out, b)
		}
	}
	start := 0 // of the current batch
	for at := 0; at < len(script); {
		end := strings.IndexByte(script[at:], '\n')
		next := len(script)
		if end >= 0 {
			end += at
			next = end + 1
		} else {
			end = len(script)
		}
		if strings.EqualFold(strings.TrimSpace(script[at:end]), "go") {
			keep(script[start:at])
			start = next
		}
		at = next
	}
	keep(script[start:])
	return out
}
