package target

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/appname"
)

// A labelled name fits PostgreSQL's 63 bytes by cutting the node's name, never
// the label, and never inside a character.
func TestLabelledNameFits(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ReadPast worker n1 task 42", labelledName("ReadPast worker n1", "task 42"))
	long := "ReadPast worker " + strings.Repeat("é", 30) // 16 + 60 bytes
	got := labelledName(long, "task 9876543210")
	require.LessOrEqual(t, len(got), appname.MaxPostgres)
	require.True(t, strings.HasSuffix(got, " task 9876543210"), got)
	require.True(t, strings.HasPrefix(got, "ReadPast worker é"), got)
	require.True(t, utf8Valid(got), "no character is cut: %q", got)
	require.Equal(t, `SET application_name = 'it''s'`, setApplicationName("it's"))
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
