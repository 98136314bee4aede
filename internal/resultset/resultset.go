// Package resultset keeps the first result sets a task body returned, as text,
// within limits a queue sets (docs/QUEUE.md, "Result output"): SQL Server
// Agent keeps a step's output up to a size, and a DBA reading a task's page
// wants to see what its SELECT said without the history growing with it.
//
// A Capture gathers rows as the executor reads them (internal/sqlrun,
// internal/target) and stops taking them once a limit is reached; the body
// runs on exactly as it would without one. Output is what is kept, stored
// with the attempt as JSON (Encode) and read back by the task page, the API
// and the export (Decode).
package resultset

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Fixed limits per attempt; the rows are the queue's setting (result_rows).
const (
	// MaxRows is the most rows a queue may ask to keep per attempt.
	MaxRows = 1000
	// MaxColumns is the most columns kept of one result set.
	MaxColumns = 50
	// MaxBytes bounds the text kept per attempt: column names and values
	// together, as the server messages are bounded (sqlrun.MaxMessages).
	MaxBytes = 64 << 10
	// MaxSets is the most result sets kept per attempt: each costs its
	// column names even when it has no row.
	MaxSets = 20
)

// CutMark ends a value that was cut at the byte limit.
const CutMark = "…[truncated]"

// Set is one result set: its column names and the rows kept, each value as
// text, nil for NULL (never the string "NULL").
type Set struct {
	Columns []string    `json:"columns"`
	Rows    [][]*string `json:"rows"`
}

// Output is what an attempt kept of its result sets.
type Output struct {
	Sets []Set `json:"sets"`
	// Truncated says, as a sentence, what was left out ("" when nothing was):
	// more rows, columns, result sets or bytes than the limits keep.
	Truncated string `json:"truncated,omitempty"`
}

// Encode is the stored form of o.
func (o *Output) Encode() string {
	b, err := json.Marshal(o)
	if err != nil { // a struct of strings always marshals
		return ""
	}
	return string(b)
}

// Decode reads an Output stored by Encode.
func Decode(s string) (Output, error) {
	var o Output
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return Output{}, fmt.Errorf("reading a stored result output: %w", err)
	}
	return o, nil
}

// Capture gathers result sets up to its limits. The nil *Capture takes
// nothing and costs nothing: every method returns at once, so the executors
// call it unconditionally when capture is off. It is used by one goroutine.
type Capture struct {
	rows    int // rows left to keep
	bytes   int // bytes left to keep
	out     Output
	current *Set
	cols    int // columns kept of the current set
	full    bool
	reasons []string
}

// New returns a capture keeping up to rows rows per attempt (with MaxColumns
// and MaxBytes), or nil when rows is 0 (capture off).
func New(rows int) *Capture {
	if rows <= 0 {
		return nil
	}
	return &Capture{rows: min(rows, MaxRows), bytes: MaxBytes}
}

// Wants reports whether the capture is on (false for the nil Capture): when
// false the caller need not read a result set's columns. Once the limits
// are reached Begin still notes each further result set as left out.
func (c *Capture) Wants() bool { return c != nil }

// Begin starts a result set with these column names. A set without
// columns (a statement that returns no rows) is not a result set.
func (c *Capture) Begin(columns []string) {
	if c == nil || len(columns) == 0 {
		return
	}
	c.current = nil
	if c.full {
		c.cut("more result sets")
		return
	}
	if len(c.out.Sets) >= MaxSets {
		c.cut(fmt.Sprintf("more than %d result sets", MaxSets))
		c.full = true
		return
	}
	kept := columns
	if len(kept) > MaxColumns {
		kept = kept[:MaxColumns]
		c.cut(fmt.Sprintf("more than %d columns", MaxColumns))
	}
	names := make([]string, len(kept))
	for i, name := range kept {
		names[i] = c.take(name)
	}
	c.out.Sets = append(c.out.Sets, Set{Columns: names, Rows: [][]*string{}})
	c.current = &c.out.Sets[len(c.out.Sets)-1]
	c.cols = len(names)
}

// WantsRow reports whether a row of the current set would be kept; when false
// the caller skips rendering it (but still reads the rows, so the body runs
// as it would).
func (c *Capture) WantsRow() bool {
	if c == nil || c.current == nil {
		return false
	}
	if c.full {
		return false
	}
	if c.rows == 0 {
		c.cut("more rows than the queue keeps (result_rows)")
		c.full = true
		return false
	}
	return true
}

// Row keeps one row of the current set, values rendered by Text; call it
// only after WantsRow said true. Values past the kept columns are dropped.
func (c *Capture) Row(values []*string) {
	if c == nil || c.current == nil || c.full {
		return
	}
	row := make([]*string, c.cols)
	for i := 0; i < c.cols && i < len(values); i++ {
		if values[i] == nil {
			continue
		}
		v := c.take(*values[i])
		row[i] = &v
	}
	c.current.Rows = append(c.current.Rows, row)
	c.rows--
}

// take counts s against the byte limit and returns it, cut and marked when
// the room left is smaller; once the room is gone the capture is full.
func (c *Capture) take(s string) string {
	if len(s) <= c.bytes {
		c.bytes -= len(s)
		return s
	}
	room := max(c.bytes-len(CutMark), 0)
	for room > 0 && !utf8.RuneStart(s[room]) {
		room--
	}
	c.bytes = 0
	c.full = true
	c.cut(fmt.Sprintf("more than %d KiB of text", MaxBytes>>10))
	return s[:room] + CutMark
}

func (c *Capture) cut(reason string) {
	for _, r := range c.reasons {
		if r == reason {
			return
		}
	}
	c.reasons = append(c.reasons, reason)
}

// Output returns what was kept, nil for the nil Capture or when the body
// returned no result set.
func (c *Capture) Output() *Output {
	if c == nil || len(c.out.Sets) == 0 {
		return nil
	}
	o := c.out
	if len(c.reasons) > 0 {
		o.Truncated = "Kept the first result sets only: the body returned " + strings.Join(c.reasons, ", ") + "."
	}
	return &o
}
