package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/appname"
)

// NotifyChannel is the channel readpast_enqueue notifies, once per distinct
// queue of a batch, with the queue name as payload; the notification is
// delivered when the enqueue commits.
const NotifyChannel = "readpast_enqueue"

const (
	// listenCheckEvery is how long the listener waits for a notification
	// before it checks, with a round trip, that its connection still works: a
	// peer that vanished without closing the socket is found within this time.
	listenCheckEvery = 30 * time.Second
	// listenMaxBackoff caps the wait between reconnection attempts.
	listenMaxBackoff = 5 * time.Second
	// listenStable is how long a connection must have lived for its loss to
	// start the back-off over from the shortest wait.
	listenStable = 10 * time.Second
)

// ListenerApplicationName starts the application_name of the listener's
// connection, followed by the node's name (or by the DSN's own
// application_name, if it sets one), so that it can be told apart in
// pg_stat_activity.
const ListenerApplicationName = appname.Product + " " + appname.Listener

// listenConfig is the store's connection config for the listener's own connection.
func (s *Store) listenConfig() *pgx.ConnConfig {
	cfg := s.conn.Copy()
	cfg.RuntimeParams["application_name"] = s.listenerName
	return cfg
}

// Listen implements queue.Listener. It holds one connection of its own, outside the
// pool that claims and finishes use, runs LISTEN readpast_enqueue on it and
// calls fn with the queue of every notification. When the connection drops it
// reconnects, waiting 100 ms, then twice as long after each failure up to 5 s;
// after a reconnection it calls fn once for every known queue, since
// notifications sent while it was away are lost. It returns nil when ctx ends.
func (s *Store) Listen(ctx context.Context, fn func(queue string)) error {
	var backoff time.Duration
	reconnect := false
	for ctx.Err() == nil {
		var connected time.Time
		err := s.listenOnce(ctx, fn, reconnect, func() { connected = time.Now() })
		if ctx.Err() != nil {
			break
		}
		if !connected.IsZero() && time.Since(connected) >= listenStable {
			backoff = 0
		}
		backoff = min(max(backoff*2, 100*time.Millisecond), listenMaxBackoff)
		s.log.Warn("listening for enqueues: no connection; reconnecting", "retry_in", backoff, "err", err)
		reconnect = true
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// listenOnce connects, listens and delivers notifications until the connection
// fails or ctx ends. onListening is called once LISTEN is in place.
func (s *Store) listenOnce(ctx context.Context, fn func(string), wakeAll bool, onListening func()) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, s.listenConfig())
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+NotifyChannel)
	}
	var queues []string
	if err == nil && wakeAll {
		var rows pgx.Rows
		if rows, err = conn.Query(cctx, `SELECT name FROM readpast_queues`); err == nil {
			queues, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
	}
	cancel()
	if conn != nil {
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = conn.Close(closeCtx)
		}()
	}
	if err != nil {
		return wrap(err, "listening for enqueues")
	}
	onListening()
	if wakeAll {
		s.log.Info("listening for enqueues again")
		for _, q := range queues {
			fn(q)
		}
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, s.listenCheck)
		n, err := conn.WaitForNotification(wctx)
		timedOut := errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case n != nil:
			fn(n.Payload)
		case err != nil && timedOut && !conn.IsClosed():
			// Nothing arrived for a while: check the connection still answers.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return wrap(err, "listening for enqueues: checking the connection")
			}
		case err != nil:
			return wrap(err, "listening for enqueues")
		}
	}
}
