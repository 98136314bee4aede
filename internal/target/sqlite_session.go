package target

import "strings"

// sqliteSessionWords are what a SQLite body must contain, in any case, to
// change its connection's state or read what another body left in it:
//   - "pragma": every connection setting (query_only, foreign_keys,
//     busy_timeout, cache_size, temp_store, locking_mode, …) and the pragma
//     functions;
//   - "temp": temporary tables, views, triggers and indexes (TEMP,
//     TEMPORARY, the temp schema however quoted, sqlite_temp_schema);
//   - "attach", "detach": attached files;
//   - "changes" and "last_insert_rowid": the connection's counters, which
//     the bodies before it on a pooled connection moved;
//   - "load_extension": functions an extension would add.
//
// Transactions need no word: a body that leaves one open is rolled back and
// fails (errOpenTransaction), and its connection is closed.
var sqliteSessionWords = []string{"pragma", "temp", "attach", "detach", "changes", "last_insert_rowid", "load_extension"}

// sqliteMayChangeSession says whether body may change its connection's state
// or read another body's counters, by the words it contains, wherever they
// are (comments and string literals included): it errs only towards a
// connection of its own, which costs time, never towards a shared one.
func sqliteMayChangeSession(body string) bool {
	lower := strings.ToLower(body)
	for _, w := range sqliteSessionWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}
