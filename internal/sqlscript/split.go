package sqlscript

import (
	"errors"
	"fmt"
	"readpast/internal/dialect"
	"strconv"
	"strings"
)

// Syntax selects the lexical rules of a dialect.
type Syntax int

// The dialects' rules.
const (
	TSQL Syntax = iota
	PostgreSQL
	SQLite
)

// MaxRepeat bounds GO's repeat count: a typo must not run a batch a million
// times (go-mssqldb's batch package had the same bound).
const MaxRepeat = 1000

// Batch is one batch of a script.
type Batch struct {
	Text      string // the script's own bytes of the batch, unchanged
	Line      int    // 1-based line of the script where Text starts
	Repeat    int    // times to run it: its GO line's count, 1 without one
	Separator string // the GO line that ends it, with its line break; "" at the end of the script
}

// Blank reports whether the batch holds only white space. Executors skip
// blank batches; a batch of comments is not blank.
func (b Batch) Blank() bool { return strings.TrimSpace(b.Text) == "" }

// Error is a GO line sqlcmd would refuse.
type Error struct {
	Line   int    // 1-based
	Text   string // the line, without its line break
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d (%q): %s", e.Line, e.Text, e.Reason)
}

// Split splits script into its batches. Text+Separator of every batch, in
// order, is script exactly. A script without GO lines is one batch; an empty
// script is one blank batch.
func Split(script string, syntax Syntax) ([]Batch, error) {
	var out []Batch
	lx := lexer{syntax: syntax}
	start, startLine := 0, 1
	line := 1
	for at := 0; at < len(script); {
		end := strings.IndexByte(script[at:], '\n')
		next := len(script)
		if end >= 0 {
			next = at + end + 1
		}
		text := script[at:next]
		if lx.normal() {
			repeat, isGO, err := goLine(text)
			if err != nil {
				return nil, &Error{Line: line, Text: strings.TrimRight(text, "\r\n"), Reason: err.Error()}
			}
			if isGO {
				out = append(out, Batch{Text: script[start:at], Line: startLine, Repeat: repeat, Separator: text})
				start, startLine = next, line+strings.Count(text, "\n")
				at, line = next, line+1
				continue
			}
		}
		lx.scan(text)
		at, line = next, line+1
	}
	out = append(out, Batch{Text: script[start:], Line: startLine, Repeat: 1})
	return out, nil
}

// Batches returns the batches of script that are not blank: what an executor
// runs.
func Batches(script string, syntax Syntax) ([]Batch, error) {
	all, err := Split(script, syntax)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, b := range all {
		if !b.Blank() {
			out = append(out, b)
		}
	}
	return out, nil
}

// goLine reports whether line (with its line break) is a GO separator, and
// its repeat count. A line that starts with GO and a blank but is no valid
// separator is an error.
func goLine(line string) (repeat int, ok bool, err error) {
	s := strings.TrimRight(line, "\r\n")
	s = strings.TrimLeft(s, " \t")
	if len(s) < 2 || !strings.EqualFold(s[:2], "go") {
		return 0, false, nil
	}
	rest := s[2:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && !strings.HasPrefix(rest, "--") {
		return 0, false, nil // GOTO, go_live_date, go.tbl, GO;
	}
	if i := strings.Index(rest, "--"); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return 1, true, nil
	}
	n, perr := strconv.Atoi(rest)
	switch {
	case perr != nil:
		return 0, false, fmt.Errorf("GO takes only a repeat count and a -- comment, not %q", rest)
	case n < 1:
		return 0, false, fmt.Errorf("GO %d runs nothing: a repeat count is 1 or more", n)
	case n > MaxRepeat:
		return 0, false, fmt.Errorf("GO %d repeats a batch more than %d times", n, MaxRepeat)
	}
	return n, true, nil
}

// SyntaxOf returns the lexical rules of a dialect; T-SQL for SQL Server and
// for anything else.
func SyntaxOf(d dialect.Dialect) Syntax {
	switch d {
	case dialect.Postgres:
		return PostgreSQL
	case dialect.SQLite:
		return SQLite
	}
	return TSQL
}

// Run is one execution of a batch, as an executor sends it.
type Run struct {
	Text  string
	Label string // "batch 2 of 3", "batch 2 of 3 (run 2 of 5)": for errors, when there are several runs
}

// Runs returns what an executor sends for script, in order: each batch that
// is not blank, as many times as its GO line says. A bad GO line is an error
// and nothing runs.
func Runs(script string, syntax Syntax) ([]Run, error) {
	batches, err := Batches(script, syntax)
	if err != nil {
		return nil, err
	}
	var out []Run
	for i, b := range batches {
		for r := 0; r < b.Repeat; r++ {
			label := fmt.Sprintf("batch %d of %d", i+1, len(batches))
			if b.Repeat > 1 {
				label += fmt.Sprintf(" (run %d of %d)", r+1, b.Repeat)
			}
			out = append(out, Run{Text: b.Text, Label: label})
		}
	}
	return out, nil
}

// ErrNoBatch is a script of only GO lines and white space: it would
// succeed having run nothing (issue 25), which no caller means.
var ErrNoBatch = errors.New("holds only GO lines and white space: there is no batch to run")

// Check reports a GO line that no dialect's rules accept, the way Split words
// it for T-SQL, or ErrNoBatch when the script holds nothing to run; nil when
// the script splits under the rules of at least one dialect into at least one
// batch that is not blank. An enqueue runs it before the target's dialect is
// known for sure (a task may run on another server than the store's), so it
// refuses only a script that cannot run anywhere; the executor splits with
// its own rules.
func Check(script string) error {
	var refused error
	for _, syntax := range []Syntax{TSQL, PostgreSQL, SQLite} {
		batches, err := Batches(script, syntax)
		switch {
		case err == nil && len(batches) > 0:
			return nil
		case err == nil:
			refused = ErrNoBatch
		case refused == nil:
			refused = err
		}
	}
	return refused
}
