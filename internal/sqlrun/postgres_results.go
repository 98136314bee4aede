package sqlrun

import (
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"readpast/internal/resultset"
)

// byteaOID is PostgreSQL's bytea type (pg_type.oid 17).
const byteaOID = 17

// pgResultSet is a result set of the simple query protocol being captured:
// its values arrive as the server's text; bytea's (hex output, "\x…") is
// written 0x… as on the other dialects.
type pgResultSet struct {
	binary []bool
	text   []*string
}

func beginPgSet(m *pgproto3.RowDescription, capture *resultset.Capture) *pgResultSet {
	names := make([]string, len(m.Fields))
	s := &pgResultSet{binary: make([]bool, len(m.Fields)), text: make([]*string, len(m.Fields))}
	for i, f := range m.Fields {
		names[i] = string(f.Name)
		s.binary[i] = f.DataTypeOID == byteaOID
	}
	capture.Begin(names)
	return s
}

// row keeps one DataRow; false once the capture takes no more of this set.
// The values are copied: the message's buffer is reused by the next read.
func (s *pgResultSet) row(m *pgproto3.DataRow, capture *resultset.Capture) bool {
	if !capture.WantsRow() {
		return false
	}
	for i := range s.text {
		s.text[i] = nil
		if i >= len(m.Values) || m.Values[i] == nil {
			continue
		}
		v := string(m.Values[i])
		if s.binary[i] && strings.HasPrefix(v, `\x`) {
			v = "0x" + v[2:]
		}
		s.text[i] = &v
	}
	capture.Row(s.text)
	return true
}
