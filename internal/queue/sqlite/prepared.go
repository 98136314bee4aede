package sqlite

import "database/sql"

// execer runs statements in a write transaction: a *sql.Tx, or a preparedTx
// over one.
type execer interface {
	Exec(query string, args ...any) (sql.Result, error)
	QueryRow(query string, args ...any) *sql.Row
}

// preparedTx is a write transaction that prepares each statement once: the
// ends of a finish batch run the same six statements per attempt, and the
// driver would otherwise parse each of them again every time, which was half
// of a finish's CPU time (docs/benchmarks/drain-idle.md). The statements are
// closed with the transaction.
type preparedTx struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
}

func prepared(tx *sql.Tx) *preparedTx { return &preparedTx{Tx: tx, stmts: map[string]*sql.Stmt{}} }

// stmt returns query prepared on the transaction, nil if it could not be:
// the caller then runs it unprepared and meets the error there.
func (p *preparedTx) stmt(query string) *sql.Stmt {
	if st, ok := p.stmts[query]; ok {
		return st
	}
	st, err := p.Tx.Prepare(query)
	if err != nil {
		return nil
	}
	p.stmts[query] = st
	return st
}

func (p *preparedTx) Exec(query string, args ...any) (sql.Result, error) {
	if st := p.stmt(query); st != nil {
		return st.Exec(args...)
	}
	return p.Tx.Exec(query, args...)
}

func (p *preparedTx) QueryRow(query string, args ...any) *sql.Row {
	if st := p.stmt(query); st != nil {
		return st.QueryRow(args...)
	}
	return p.Tx.QueryRow(query, args...)
}
