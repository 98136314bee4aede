package sqlscript

import "strings"

// state is where the lexer is at a line's start: only in normal may a GO
// line separate batches.
type state int

const (
	normal   state = iota
	single         // '…' ('' inside)
	escaped        // E'…' on PostgreSQL (backslash escapes, '' inside)
	double         // "…" ("" inside)
	bracket        // […] (]] inside)
	backtick       // `…` on SQLite
	block          // /* … */, depth deep
	dollar         // $tag$ … $tag$ on PostgreSQL
)

// lexer follows just enough of a dialect's lexical structure to know whether
// a line starts outside every string, quoted identifier and comment.
type lexer struct {
	syntax Syntax
	state  state
	depth  int    // of nested block comments
	tag    string // the open dollar quote, "$tag$"
}

func (lx *lexer) normal() bool { return lx.state == normal }

// scan reads one line (with its line break) and leaves the state for the
// next. A line comment ends with its line.
func (lx *lexer) scan(line string) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch lx.state {
		case single, escaped:
			switch {
			case c == '\\' && lx.state == escaped:
				i++ // the escaped character, a quote included
			case c == '\'' && i+1 < len(line) && line[i+1] == '\'':
				i++
			case c == '\'':
				lx.state = normal
			}
		case double:
			if c == '"' {
				if i+1 < len(line) && line[i+1] == '"' {
					i++
				} else {
					lx.state = normal
				}
			}
		case bracket:
			if c == ']' {
				if i+1 < len(line) && line[i+1] == ']' {
					i++
				} else {
					lx.state = normal
				}
			}
		case backtick:
			if c == '`' {
				if i+1 < len(line) && line[i+1] == '`' {
					i++
				} else {
					lx.state = normal
				}
			}
		case block:
			switch {
			case c == '*' && i+1 < len(line) && line[i+1] == '/':
				i++
				if lx.depth--; lx.depth == 0 {
					lx.state = normal
				}
			case c == '/' && i+1 < len(line) && line[i+1] == '*' && lx.syntax != SQLite:
				i++
				lx.depth++
			}
		case dollar:
			if c == '$' && strings.HasPrefix(line[i:], lx.tag) {
				i += len(lx.tag) - 1
				lx.state = normal
			}
		default:
			i = lx.enter(line, i)
		}
	}
}

// enter looks at line[i] outside everything and opens what it starts. It
// returns the index of the last byte it consumed.
func (lx *lexer) enter(line string, i int) int {
	c := line[i]
	next := byte(0)
	if i+1 < len(line) {
		next = line[i+1]
	}
	switch {
	case c == '-' && next == '-':
		return len(line) - 1 // a line comment: the rest of the line
	case c == '/' && next == '*':
		lx.state, lx.depth = block, 1
		return i + 1
	case c == '\'':
		lx.state = single
		if lx.syntax == PostgreSQL && i > 0 && (line[i-1] == 'E' || line[i-1] == 'e') && (i == 1 || !identChar(line[i-2])) {
			lx.state = escaped
		}
	case c == '"':
		lx.state = double
	case c == '[' && lx.syntax != PostgreSQL:
		lx.state = bracket
	case c == '`' && lx.syntax == SQLite:
		lx.state = backtick
	case c == '$' && lx.syntax == PostgreSQL && (i == 0 || !identChar(line[i-1])):
		if tag, ok := dollarTag(line[i:]); ok {
			lx.state, lx.tag = dollar, tag
			return i + len(tag) - 1
		}
	}
	return i
}

// dollarTag returns the dollar quote s starts with ("$$" or "$name$"); $1 and
// the like are parameters, not quotes.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		case c >= '0' && c <= '9' && j > 1:
		default:
			return "", false
		}
	}
	return "", false
}

// identChar reports whether c may be part of an identifier.
func identChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
