package sqlrun

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// clientCheckInterval is how often the server checks, while a statement of a
// ReadPast session runs, that ReadPast is still at the other end.
const clientCheckInterval = time.Second

// clientCheckParam is PostgreSQL's setting for it (PostgreSQL 14 and later).
const clientCheckParam = "client_connection_check_interval"

// CheckClientGone makes the server stop a statement of cfg's sessions soon
// after ReadPast's end of the connection went away (a node cut off, a process
// killed): without it PostgreSQL notices a vanished client only when it next
// writes to it, so a body in a long statement runs to its end, beside the
// attempt of the node that took its task over. It is a startup parameter,
// not a SET, so the DISCARD ALL after every body keeps it; a server older
// than 14, which refuses the name at connect, is asked once which version it
// is (one connection, on the pool's first connect) and then left without it.
// A DSN that sets it keeps its own value. It does not see a line that is
// blackholed (no FIN reaches the server) or a client that is frozen (its
// socket stays open): the reclaiming node's SessionEnder covers those.
func CheckClientGone(cfg *pgxpool.Config) {
	if _, set := cfg.ConnConfig.RuntimeParams[clientCheckParam]; set {
		return
	}
	var supported atomic.Int32 // 0 unknown, 1 yes, 2 no
	prev := cfg.BeforeConnect
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		if prev != nil {
			if err := prev(ctx, cc); err != nil {
				return err
			}
		}
		if supported.Load() == 0 {
			switch ok, known := serverHasClientCheck(ctx, cc); {
			case known && ok:
				supported.Store(1)
			case known:
				supported.Store(2)
			}
		}
		if supported.Load() == 1 {
			cc.RuntimeParams[clientCheckParam] = strconv.FormatInt(clientCheckInterval.Milliseconds(), 10)
		}
		return nil
	}
}

// serverHasClientCheck connects once without the parameter and reads the
// server's version; known is false when the server could not be asked.
func serverHasClientCheck(ctx context.Context, cc *pgx.ConnConfig) (ok, known bool) {
	c, err := pgconn.ConnectConfig(ctx, cc.Config.Copy())
	if err != nil {
		return false, false
	}
	defer c.Close(context.Background())
	return postgresMajor(c.ParameterStatus("server_version")) >= 14, true
}

// postgresMajor reads the major version from server_version ("15.4",
// "14beta1", "16.2 (Debian 16.2-1)"); 0 when it cannot.
func postgresMajor(v string) int {
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(v[:end])
	return n
}
