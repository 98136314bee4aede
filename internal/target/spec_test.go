package target_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/target"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	s, err := target.ParseSpec("db1;tags:prod,eu;pool:8=sqlserver://u:p%40ss@h:1433?database=ops")
	require.NoError(t, err)
	require.Equal(t, target.Spec{Name: "db1", DSN: "sqlserver://u:p%40ss@h:1433?database=ops", Tags: []string{"eu", "prod"}, Pool: 8}, s)
	s, err = target.ParseSpec("  lite = /var/lib/rp/lite.db ")
	require.NoError(t, err)
	require.Equal(t, target.Spec{Name: "lite", DSN: "/var/lib/rp/lite.db"}, s)
	for entry, want := range map[string]string{
		"db1":                            "NAME=DSN",
		"=x.db":                          "target name",
		"store=x.db":                     "reserved",
		"default=x.db":                   "reserved",
		"tag:prod=x.db":                  "target name",
		"db1;tags:a b=x.db":              "tag",
		"db1;pool:0=x.db":                "pool",
		"db1;pool:x=x.db":                "pool",
		"db1;color:red=x.db":             "unknown attribute",
		"db1=mysql://u:Hidden1@h/db":     "not one ReadPast reads",
		"db1=postgres://h/db\x01Hidden1": "not one ReadPast reads",
	} {
		_, err := target.ParseSpec(entry)
		require.ErrorContains(t, err, want, entry)
		require.NotContains(t, err.Error(), "Hidden1", "an error never quotes the DSN")
	}
}

func TestParseListAndMerge(t *testing.T) {
	t.Parallel()
	list, err := target.ParseList("env", "# comment\n\ndb1=a.db\n  db2;tags:x=b.db\n")
	require.NoError(t, err)
	require.Len(t, list, 2)
	_, err = target.ParseList("env", "db1=a.db\nbroken\n")
	require.ErrorContains(t, err, "env line 2")
	_, err = target.Merge(list, []target.Spec{{Name: "db1", DSN: "c.db"}})
	require.ErrorContains(t, err, "configured twice")
}

func TestReadFileRefusesWhatOthersCanRead(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows protects the file by its ACL; no mode is checked")
	}
	path := filepath.Join(t.TempDir(), "targets")
	require.NoError(t, os.WriteFile(path, []byte("db1=a.db\n"), 0o600))
	list, err := target.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, list, 1)
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660} {
		require.NoError(t, os.Chmod(path, mode))
		_, err = target.ReadFile(path)
		require.ErrorContains(t, err, "chmod 600 "+path, "mode %04o", mode)
	}
}

func TestRedactRemovesEveryFormOfThePassword(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://u:Pw-Red4cted@h/db",
		"sqlserver://u:Pw-Red4cted@h:1433?database=x",
		"sqlserver://h?user+id=u&password=Pw-Red4cted",
		"postgres://h/db?password=Pw-Red4cted",
	} {
		secrets := target.Secrets(dsn)
		got := target.Redact("connecting to "+dsn+" failed: bad password Pw-Red4cted", secrets)
		require.NotContains(t, got, "Pw-Red4cted", dsn)
		require.Contains(t, got, "connecting to *** failed")
	}
}
