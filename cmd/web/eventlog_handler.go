package main

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	"github.com/kardianos/service"
)

// eventLogHandler writes slog records to a service logger (the Windows event
// log under the service manager): each record as one text line, at the
// event type of its level.
type eventLogHandler struct {
	out  service.Logger
	mu   *sync.Mutex
	buf  *bytes.Buffer
	text slog.Handler // formats into buf
}

func newEventLogHandler(out service.Logger, level slog.Leveler) *eventLogHandler {
	buf := &bytes.Buffer{}
	return &eventLogHandler{out: out, mu: &sync.Mutex{}, buf: buf,
		text: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})}
}

func (h *eventLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.text.Enabled(ctx, l)
}

func (h *eventLogHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Reset()
	if err := h.text.Handle(ctx, r); err != nil {
		return err
	}
	line := string(bytes.TrimRight(h.buf.Bytes(), "\n"))
	switch {
	case r.Level >= slog.LevelError:
		return h.out.Error(line)
	case r.Level >= slog.LevelWarn:
		return h.out.Warning(line)
	}
	return h.out.Info(line)
}

func (h *eventLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &eventLogHandler{out: h.out, mu: h.mu, buf: h.buf, text: h.text.WithAttrs(attrs)}
}

func (h *eventLogHandler) WithGroup(name string) slog.Handler {
	return &eventLogHandler{out: h.out, mu: h.mu, buf: h.buf, text: h.text.WithGroup(name)}
}
