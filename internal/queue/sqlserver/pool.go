package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
	"time"
)

// The store's pool. database/sql keeps 2 idle connections unless told
// otherwise and closes every connection returned beyond them, so a node whose
// pools, heartbeat, finisher and scheduler reach the store a few at a time
// logged in again for most of its requests: a node with 8 idle queues opened
// 16 sessions in 30 s. Each login is a TCP and TLS handshake and an
// authentication, and shows up in the server's login auditing.
const (
	// storeMaxIdle is high enough never to be the limit: the pool keeps as
	// many connections as the node used at once in the last storeMaxIdleTime,
	// which is what the work needs, and no more.
	storeMaxIdle = 256
	// storeMaxIdleTime: connections that sit idle behind a firewall get cut
	// silently; recycle them, and shrink the pool after a burst.
	storeMaxIdleTime = 5 * time.Minute
	// storeMaxLifetime replaces every session within the hour: a failover or
	// DNS change is picked up, and whatever a session may hold that no reset
	// undoes does not last.
	storeMaxLifetime = time.Hour
)

// configurePool sizes the store's pool.
func configurePool(db *sql.DB) {
	db.SetMaxIdleConns(storeMaxIdle)
	db.SetConnMaxIdleTime(storeMaxIdleTime)
	db.SetConnMaxLifetime(storeMaxLifetime)
}

// countingConnector counts the sessions (logins) the store's pool opens.
type countingConnector struct {
	driver.Connector
	opened atomic.Int64
}

// Connect implements driver.Connector.
func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err == nil {
		c.opened.Add(1)
	}
	return conn, err
}

// SessionsOpened returns how many sessions (logins) the store's pool has
// opened since Open: /metrics shows it as readpast_store_sessions_opened_total.
func (s *Store) SessionsOpened() int64 { return s.sessions.opened.Load() }
