package postgres

import (
	"fmt"
	"strings"

	"readpast/internal/sqlrun"
)

// page builds a keyset page newest first (`ORDER BY id DESC LIMIT n`) over
// indexes that end in id. The hot path keeps few index entries per task
// (migrations/*/000001_baseline), so an index may hold a filter's rows as several ranges
// in id order, one per state or outcome: such a page reads each range's newest
// n rows and merges them, which costs the same however long the history is.
//
// A page finds its ids first and reads its rows by primary key after. Asked
// for every column at once, PostgreSQL costed the primary key, whose order is
// the heap's, cheaper than the filter's own index, and walked it newest first
// filtering: for a queue, state or outcome with few recent rows that reads the
// whole history (TestPagesSkipOtherHistory). For the ids alone the filter's
// index answers without the heap, and is the cheaper plan.
type page struct {
	cols, table string
	args        []any
	where       []string
}

// add appends a condition; %d in cond is the number of its argument.
func (p *page) add(cond string, v any) {
	p.args = append(p.args, v)
	p.where = append(p.where, fmt.Sprintf(cond, len(p.args)))
}

// one is the plain page: every condition, newest first.
func (p *page) one(limit int) (string, []any) {
	args := append(p.args, limit)
	return p.rows(p.ids(p.where, len(args))), args
}

// split merges one page per branch condition: a branch names one range of an
// index, such as a literal state.
func (p *page) split(branches []string, limit int) (string, []any) {
	args := append(p.args, limit)
	parts := make([]string, len(branches))
	for i, b := range branches {
		parts[i] = "(" + p.ids(append(append([]string(nil), p.where...), b), len(args)) + ")"
	}
	return p.rows(fmt.Sprintf(`SELECT id FROM (%s) p ORDER BY id DESC LIMIT $%d`, strings.Join(parts, " UNION ALL "), len(args))), args
}

// perQueue merges one page per queue of readpast_queues (every queue a task
// names has a row there): for a filter whose index leads with the queue.
func (p *page) perQueue(limit int) (string, []any) {
	args := append(p.args, limit)
	inner := p.ids(append(append([]string(nil), p.where...), "queue = q.name"), len(args))
	return p.rows(fmt.Sprintf(`SELECT p.id FROM readpast_queues q CROSS JOIN LATERAL (%s) p ORDER BY p.id DESC LIMIT $%d`, inner, len(args))), args
}

// ids is the newest ids that match where.
func (p *page) ids(where []string, limitArg int) string {
	q := `SELECT id FROM ` + p.table
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, limitArg)
}

// rows reads the page's rows by primary key, given the query of their ids.
func (p *page) rows(ids string) string {
	return `SELECT ` + p.cols + ` FROM ` + p.table + ` WHERE id = ANY (ARRAY(` + ids + `)) ORDER BY id DESC`
}

// equalsEach is one condition per value: column = 'value', for split.
func equalsEach[T ~string](column string, values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = column + " = " + literal(string(v))
	}
	return out
}

// literal quotes a value from a fixed set (a validated state or outcome) for a
// condition the planner must see: a partial index serves `state = 'failed'`
// only when it can prove the state is not 'running', which a parameter hides
// from a generic plan.
func literal(v string) string { return sqlrun.PostgresLiteral(v) }
