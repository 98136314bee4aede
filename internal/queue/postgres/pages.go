package postgres

import (
	"fmt"
	"strings"
)

// page builds a keyset page newest first (`ORDER BY id DESC LIMIT n`) over
// indexes that end in id. The hot path keeps few index entries per task
// (migration 000008), so an index may hold a filter's rows as several ranges
// in id order, one per state or outcome: such a page reads each range's newest
// n rows and merges them, which costs the same however long the history is.
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
	return p.query(p.where, len(args)), args
}

// split merges one page per branch condition: a branch names one range of an
// index, such as a literal state.
func (p *page) split(branches []string, limit int) (string, []any) {
	args := append(p.args, limit)
	parts := make([]string, len(branches))
	for i, b := range branches {
		parts[i] = "(" + p.query(append(append([]string(nil), p.where...), b), len(args)) + ")"
	}
	return fmt.Sprintf(`SELECT * FROM (%s) p ORDER BY id DESC LIMIT $%d`, strings.Join(parts, " UNION ALL "), len(args)), args
}

// perQueue merges one page per queue of readpast_queues (every queue a task
// names has a row there): for a filter whose index leads with the queue.
func (p *page) perQueue(limit int) (string, []any) {
	args := append(p.args, limit)
	inner := p.query(append(append([]string(nil), p.where...), "queue = q.name"), len(args))
	return fmt.Sprintf(`SELECT p.* FROM readpast_queues q CROSS JOIN LATERAL (%s) p ORDER BY p.id DESC LIMIT $%d`, inner, len(args)), args
}

func (p *page) query(where []string, limitArg int) string {
	q := `SELECT ` + p.cols + ` FROM ` + p.table
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, limitArg)
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
func literal(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
