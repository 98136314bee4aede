package postgres

import (
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxMessages caps the server messages kept for one attempt (SPEC §6: capped).
const maxMessages = 64 << 10

// noticeRouter hands the NOTICE / WARNING messages a connection receives to
// whoever listens on that connection now (a transactional task's body), since
// pgx reports notices per connection, not per statement.
type noticeRouter struct {
	mu   sync.Mutex
	sink map[*pgconn.PgConn]*strings.Builder
}

func newNoticeRouter() *noticeRouter {
	return &noticeRouter{sink: map[*pgconn.PgConn]*strings.Builder{}}
}

// handle is the pool's OnNotice callback.
func (r *noticeRouter) handle(c *pgconn.PgConn, n *pgconn.Notice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.sink[c]
	if b == nil || b.Len() >= maxMessages {
		return
	}
	line := n.Severity + ": " + n.Message + "\n"
	if b.Len()+len(line) > maxMessages {
		// Cut on a rune boundary: the log column holds valid UTF-8 only.
		line = strings.ToValidUTF8(line[:maxMessages-b.Len()], "")
	}
	b.WriteString(line)
}

// listen starts collecting c's messages; the returned func stops and returns them.
func (r *noticeRouter) listen(c *pgconn.PgConn) func() string {
	b := &strings.Builder{}
	r.mu.Lock()
	r.sink[c] = b
	r.mu.Unlock()
	return func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.sink, c)
		return b.String()
	}
}
