package workers

import (
	"log/slog"
	"testing"
)

// testLogger sends a node's log lines to t.Log, so a failing test shows them.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(string(p))
	return len(p), nil
}
