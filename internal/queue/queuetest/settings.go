package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var settingsTests = map[string]func(*testing.T, Harness){
	"queue_settings_without_counts": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "s1"})
		_, err := b.s.UpdateQueue(b.ctx, "s2", queue.QueueUpdate{Workers: intp(3), MaxRunning: intp(7), Paused: ptr(true), Actor: "ann"})
		require.NoError(t, err)
		qs, err := b.s.QueueSettings(b.ctx)
		require.NoError(t, err)
		byName := map[string]queue.Queue{}
		for _, q := range qs {
			byName[q.Name] = q
		}
		require.Contains(t, byName, "s1", "a queue created by an enqueue is listed")
		require.Nil(t, byName["s1"].Workers)
		require.Nil(t, byName["s1"].MaxRunning)
		require.False(t, byName["s1"].Paused)
		s2 := byName["s2"]
		require.Equal(t, 3, *s2.Workers)
		require.Equal(t, 7, *s2.MaxRunning)
		require.True(t, s2.Paused)
		require.Equal(t, "ann", s2.UpdatedBy)
		require.WithinDuration(t, time.Now(), s2.UpdatedAt, time.Minute)
	},
	"listen_hears_enqueues_or_says_it_cannot": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		if !b.s.Capabilities().Listen {
			err := b.s.Listen(ctx, func(string) {})
			require.True(t, errors.Is(err, queue.ErrNotSupported), "a store without Listen says so, got %v", err)
			return
		}
		heard := make(chan string, 16)
		done := make(chan error, 1)
		go func() { done <- b.s.Listen(ctx, func(q string) { heard <- q }) }()
		// The listener connects in the background: enqueue until it hears.
		deadline := time.After(20 * time.Second)
		for {
			b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "heard"})
			select {
			case q := <-heard:
				require.Equal(t, "heard", q)
				cancel()
				require.NoError(t, <-done, "Listen returns nil when its context ends")
				return
			case <-time.After(200 * time.Millisecond):
			case <-deadline:
				t.Fatal("the listener never heard an enqueue")
			}
		}
	},
}
