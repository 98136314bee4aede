package sqlserver

import "database/sql"

// PoolOf exposes the store's pool to the package's external tests, which
// pin it to one connection to see what a body leaves on a pooled session.
func PoolOf(s *Store) *sql.DB { return s.db }
