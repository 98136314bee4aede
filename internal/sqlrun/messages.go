// Package sqlrun runs a task body's batches on a connection the caller holds,
// for every dialect, the way both the target executors (internal/target) and
// the stores' transactional path (internal/queue/...) need it: each batch sent
// as it is, rows affected added up, server messages (PRINT, RAISERROR, NOTICE)
// gathered in order and capped, server errors worded as the DBA's own tools
// word them. One place for it, so a body runs the same way on either path.
package sqlrun

import (
	"strings"
	"sync"
)

// MaxMessages caps the server messages kept per attempt (SPEC §6).
const MaxMessages = 64 << 10

// truncatedMarker ends a message log that was cut.
const truncatedMarker = "\n[… messages truncated at 64 KiB]"

// Messages collects server messages up to MaxMessages; it is safe for the
// driver's callback goroutine and the executor to use at once. The zero value
// is ready to use.
type Messages struct {
	mu  sync.Mutex
	b   strings.Builder
	cut bool
}

// Add appends one message line; past the cap it is cut and marked.
func (m *Messages) Add(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cut {
		return
	}
	room := MaxMessages - len(truncatedMarker) - m.b.Len()
	if len(line)+1 > room {
		if room > 0 {
			m.b.WriteString(safePrefix(line, room))
		}
		m.b.WriteString(truncatedMarker)
		m.cut = true
		return
	}
	m.b.WriteString(line)
	m.b.WriteByte('\n')
}

// String returns the lines so far, each ended by a line break.
func (m *Messages) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b.String()
}

// safePrefix cuts s to at most n bytes without splitting a UTF-8 character.
func safePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
