package target

import (
	"strings"
	"sync"
)

// MaxMessages caps the server messages kept per attempt (SPEC §6).
const MaxMessages = 64 << 10

// truncatedMarker ends a message log that was cut.
const truncatedMarker = "\n[… messages truncated at 64 KiB]"

// messages collects server messages up to MaxMessages; it is safe for the
// driver's callback goroutine and the executor to use at once.
type messages struct {
	mu  sync.Mutex
	b   strings.Builder
	cut bool
}

func (m *messages) add(line string) {
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

func (m *messages) String() string {
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
