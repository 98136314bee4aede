package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsAreLoopbackAndEmbedded(t *testing.T) {
	t.Parallel()
	c, err := parseFlags("t", nil, envOf(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Listen)
	require.Empty(t, c.DSN, "no DSN: the embedded SQLite default")
	require.Equal(t, 30*time.Second, c.Lease)
	require.Equal(t, time.Second, c.Poll)
	require.Equal(t, 4, c.Workers)
}

func TestEnvAndFlags(t *testing.T) {
	t.Parallel()
	c, err := parseFlags("t", []string{"--workers", "7"}, envOf(map[string]string{
		"READPAST_DSN": "postgres://x@h/db", "READPAST_LEASE": "45s", "READPAST_WORKERS": "2",
	}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "postgres://x@h/db", c.DSN)
	require.Equal(t, 45*time.Second, c.Lease)
	require.Equal(t, 7, c.Workers, "a flag beats the environment")
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:8080"}, nil, "not a loopback address"},
		{[]string{"--listen", "192.168.1.5:80"}, map[string]string{"READPAST_VIEWER_TOKEN": "vvvvvvvvvvvvvvvvvvvv"}, "set --operator-token"},
		{[]string{"--listen", "nohost"}, nil, "--listen"},
		{[]string{"--workers", "-1"}, nil, "--workers"},
		{nil, map[string]string{"READPAST_LEASE": "soon"}, "READPAST_LEASE"},
		{[]string{"--operator-token", "short"}, nil, "at least 16"},
		{[]string{"--poll", "1ms"}, nil, "--poll"},
		{[]string{"extra"}, nil, "unexpected argument"},
		{nil, map[string]string{"READPAST_VIEWER_TOKEN": "vvvvvvvvvvvvvvvvvvvv"}, "without --operator-token"},
	}
	for _, c := range cases {
		_, err := parseFlags("t", c.args, envOf(c.env), io.Discard)
		require.Error(t, err, "%v %v", c.args, c.env)
		require.Contains(t, err.Error(), c.want)
	}
	_, err := parseFlags("t", []string{"--listen", "0.0.0.0:8080", "--operator-token", strings.Repeat("s", 20)}, envOf(nil), io.Discard)
	require.NoError(t, err, "with credentials any address is allowed")
}
