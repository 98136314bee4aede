// Package appname names the sessions ReadPast opens: SQL Server's "app name"
// (sys.dm_exec_sessions.program_name) and PostgreSQL's application_name
// (pg_stat_activity), so a DBA can tell ReadPast's sessions, and which node and
// part of it holds each, from anything else on the server.
package appname

import "strings"

// Product starts every name.
const Product = "ReadPast"

// The roles a session has.
const (
	Store    = "store"    // claims, finishes, the dashboard's reads
	Listener = "listener" // PostgreSQL's LISTEN connection
	Worker   = "worker"   // runs task bodies on a target
	Selftest = "selftest"
)

// MaxPostgres is the longest application_name PostgreSQL keeps (NAMEDATALEN
// - 1 bytes); it cuts a longer one silently, so the role comes before the node.
const MaxPostgres = 63

// For is the name of role's sessions on node: "ReadPast store node-1", or
// "ReadPast store" when node is "".
func For(role, node string) string {
	return strings.TrimSpace(Product + " " + role + " " + node)
}
