package target

import (
	"context"
	"strings"

	"readpast/internal/appname"
)

type labelKey struct{}

// WithLabel returns ctx carrying what the session that runs a body should
// say it runs ("task 42"): on PostgreSQL, Run sets it in application_name
// with the body's first batch, in the same round trip, and the session reset
// after the body takes it back off.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

func labelOf(ctx context.Context) string {
	l, _ := ctx.Value(labelKey{}).(string)
	return l
}

// labelledName is the session's name while it runs a body labelled label:
// name followed by the label, name cut so that the whole fits PostgreSQL's
// limit (the label says more about this session than the node's name's end).
func labelledName(name, label string) string {
	full := name + " " + label
	if over := len(full) - appname.MaxPostgres; over > 0 {
		keep := max(len(name)-over, 0)
		for keep > 0 && !utf8Start(name[keep]) {
			keep-- // not in the middle of a character
		}
		full = name[:keep] + " " + label
	}
	return full
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// setApplicationName is the statement that sets the session's name.
func setApplicationName(name string) string {
	return "SET application_name = '" + strings.ReplaceAll(name, "'", "''") + "'"
}
