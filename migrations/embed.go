// Package migrations embeds the golang-migrate SQL files of every dialect, one
// folder each (sqlserver/, postgres/, sqlite/), numbered alike so that version N
// means the same schema on every dialect, and runs them (migrate.go): each
// store's Migrate, MigrateDown and Status call Up, Down and Status here.
package migrations

import "embed"

// FS holds every dialect's migration folder.
//
//go:embed sqlite/*.sql postgres/*.sql sqlserver/*.sql
var FS embed.FS
