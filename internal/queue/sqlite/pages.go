package sqlite

import "strings"

// keysetPage is a page newest first (`ORDER BY id DESC LIMIT n`) of the rows
// of table that match where.
func keysetPage(cols, table string, where []string, args []any, limit int) (string, []any) {
	q := `SELECT ` + cols + ` FROM ` + table
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + ` ORDER BY id DESC LIMIT ?`, append(args, limit)
}

// mergedPage is keysetPage for a filter whose index holds its rows as one
// range per value of column, in id order ((queue, outcome, id) of the log,
// (group_name, state, id) of the tasks): each range is read newest first as
// far as the page goes, and the page is the newest of their rows. It costs
// the same however long the history is; one ORDER BY over the filter would
// read all of its rows first.
func mergedPage[T ~string](cols, table string, where []string, args []any, column string, values []T, limit int) (string, []any) {
	branches := make([]string, len(values))
	var all []any
	for i, v := range values {
		branches[i] = `SELECT id FROM (SELECT id FROM ` + table + ` WHERE ` + strings.Join(append(append([]string(nil), where...), column+` = ?`), " AND ") +
			` ORDER BY id DESC LIMIT ?)`
		all = append(append(all, args...), string(v), limit)
	}
	return `SELECT ` + cols + ` FROM ` + table + ` WHERE id IN (` + strings.Join(branches, " UNION ALL ") +
		`) ORDER BY id DESC LIMIT ?`, append(all, limit)
}
