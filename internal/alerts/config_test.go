package alerts_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
)

// A configuration with mistakes is refused with a sentence for each.
func TestConfigMistakesAreNamed(t *testing.T) {
	_, err := alerts.Parse([]byte(`{
		"operators": [{"name": "dba", "email": ["not an address"]},
		              {"name": "ops", "webhooks": [{"name": "h", "url": "ftp://x", "secret": "short", "format": "xml"}]},
		              {"name": "idle"}],
		"rules": [{"name": "r1", "kind": "task_exploded", "operators": ["dba"]},
		          {"name": "r2", "kind": "queue_stuck", "operators": ["nobody"]},
		          {"name": "r3", "kind": "node_silent", "threshold": "1m", "window": "1m", "operators": ["ops"]},
		          {"name": "r4", "kind": "task_failed", "sqlstate_class": "40P01", "operators": ["ops"]}]}`))
	require.Error(t, err)
	for _, want := range []string{
		`operator dba: "not an address" is not an e-mail address`,
		"operator dba has e-mail addresses but there is no smtp server",
		"operator ops: webhook h: the url must be an http(s) URL",
		"operator ops: webhook h: the signing secret must be at least 16 characters",
		`format "xml" is not one of plain, slack, teams`,
		"operator idle has no channel",
		`rule r1: kind "task_exploded" is not one of`,
		"rule r2: operator nobody is not defined",
		"rule r2: kind queue_stuck needs a threshold",
		"rule r3: window is for event rules",
		"rule r4: sqlstate_class \"40P01\" must be the two first characters",
	} {
		require.Contains(t, err.Error(), want)
	}
	_, err = alerts.Parse([]byte(`{"operators": [], "rules": [], "smtp_host": "x"}`))
	require.ErrorContains(t, err, `unknown field "smtp_host"`)
	_, err = alerts.Parse([]byte(`{"operators": [], "rules": [{"name": "r", "kind": "node_silent", "threshold": 5, "operators": []}]}`))
	require.ErrorContains(t, err, `write durations as strings`)
}

// The file holds secrets: a file others can read is refused.
func TestLoadFileChecksItsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are Unix's")
	}
	path := filepath.Join(t.TempDir(), "alerts.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"operators": [], "rules": []}`), 0o640))
	require.NoError(t, os.Chmod(path, 0o640))
	_, err := alerts.LoadFile(path)
	require.ErrorContains(t, err, "chmod 600")
	require.NoError(t, os.Chmod(path, 0o600))
	_, err = alerts.LoadFile(path)
	require.NoError(t, err)
}

// The error facts of both targets' wording.
func TestParseError(t *testing.T) {
	require.Equal(t, alerts.ErrorFacts{Number: 1205, Severity: 13},
		alerts.ParseError("Msg 50000, Level 16, State 1, Line 3: first\nMsg 1205, Level 13, State 51, Line 9: Transaction was deadlocked"))
	require.Equal(t, alerts.ErrorFacts{SQLState: "40P01"}, alerts.ParseError("ERROR: deadlock detected (SQLSTATE 40P01)"))
	require.Equal(t, alerts.ErrorFacts{}, alerts.ParseError("timed out after 30s"))
}
