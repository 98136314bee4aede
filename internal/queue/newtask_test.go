package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Normalize refuses, on every dialect alike, what a store could not keep as it
// was sent, naming the field; it keeps everything else byte for byte.
func TestNormalizeRefusesWhatCannotBeStoredAsSent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		task  NewTask
		field string
		want  string
	}{
		{"NUL in the body", NewTask{Body: "SELECT 1\x00"}, "body", "NUL"},
		{"NUL in the group", NewTask{Body: "SELECT 1", Group: "g\x00"}, "group", "NUL"},
		{"NUL in the chain", NewTask{Body: "SELECT 1", Chain: "\x00"}, "chain", "NUL"},
		{"NUL in the unique key", NewTask{Body: "SELECT 1", UniqueKey: "k\x00"}, "unique_key", "NUL"},
		{"NUL in the actor", NewTask{Body: "SELECT 1", CreatedBy: "op\x00"}, "created_by", "NUL"},
		{"NUL in the queue", NewTask{Body: "SELECT 1", Queue: "q\x00"}, "queue", "not a queue name"},
		{"line break in the group", NewTask{Body: "SELECT 1", Group: "g\nforged log line"}, "group", "U+000A"},
		{"invalid UTF-8 in the body", NewTask{Body: "SELECT '\xff'"}, "body", "UTF-8"},
		{"invalid UTF-8 in the chain", NewTask{Body: "SELECT 1", Chain: "c\xc3"}, "chain", "UTF-8"},
		{"a surrogate in the group", NewTask{Body: "SELECT 1", Group: "\xed\xa0\x80"}, "group", "UTF-8"},
		{"a timeout that would round to none", NewTask{Body: "SELECT 1", Timeout: 400 * time.Microsecond}, "timeout", "at least 1ms"},
		{"too many attempts", NewTask{Body: "SELECT 1", MaxAttempts: MaxAttemptsLimit + 1}, "max_attempts", "use 1 to 1000"},
		{"negative attempts", NewTask{Body: "SELECT 1", MaxAttempts: -1}, "max_attempts", "use 1 to 1000"},
		{"a body of only GO lines", NewTask{Body: "GO\nGO 2\n"}, "body", "no batch to run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.task.Normalize(0)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, c.field, ve.Field)
			require.Contains(t, ve.Reason, c.want)
		})
	}

	kept := NewTask{Body: "SELECT 'é 😀\t' -- \r\nGO\r\n", Group: "é\tg", Chain: "c 1", UniqueKey: "k", Timeout: time.Millisecond}
	n, err := kept.Normalize(0)
	require.NoError(t, err)
	require.Equal(t, kept.Body, n.Body)
	require.Equal(t, kept.Group, n.Group)
	require.Equal(t, kept.Chain, n.Chain)
	require.Equal(t, time.Millisecond, n.Timeout)
	require.Equal(t, DefaultMaxAttempts, n.MaxAttempts, "0 is the Go zero value: the default")

	_, err = NormalizeAll([]NewTask{{Body: "SELECT 1"}, {Body: "SELECT 1", Group: strings.Repeat("g", MaxNameLength+1)}}, 0)
	require.ErrorContains(t, err, "tasks[1].group")
}

// A queue or schedule name goes into URLs: "." and ".." would name the
// directory and its parent there, so names of dots only are refused.
func TestNamesOfDotsOnlyAreRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{".", "..", "..."} {
		if ValidQueueName(name) || CheckQueueName("queue", name) == nil || CheckScheduleName("name", name) == nil {
			t.Errorf("%q is accepted as a name", name)
		}
	}
	for _, name := range []string{"a.b", ".hidden", "v1.2", "x..y"} {
		if !ValidQueueName(name) {
			t.Errorf("%q is refused", name)
		}
	}
}
