package sqlscript

import "strings"

// SQLiteStatements splits one SQLite batch into its statements, each with
// its ';', so that each can be stepped on its own and its rows read (the
// driver runs a batch of several statements but returns no rows of them).
// It follows SQLite's lexical rules: a ';' ends a statement outside string
// literals, quoted identifiers ("…", […], `…`) and comments, except inside
// the BEGIN … END body of a CREATE TRIGGER, whose CASE … END are counted so
// that a CASE's END does not end the trigger early. Text that holds only
// blanks and comments is no statement. The statements put together, with
// what was dropped, are the batch: no byte of a statement is changed.
func SQLiteStatements(batch string) []string {
	var (
		out     []string
		start   int
		words   []string // the statement's first three words, upper-cased
		trigger bool     // the statement is a CREATE [TEMP] TRIGGER
		depth   int      // BEGIN and CASE not yet ended, in a trigger
		began   bool     // the trigger's body has begun
		code    bool     // the statement holds something besides comments
	)
	end := func(i int) {
		if code {
			out = append(out, batch[start:i])
		}
		start, words, trigger, depth, began, code = i, nil, false, 0, false, false
	}
	for i := 0; i < len(batch); i++ {
		c := batch[i]
		switch {
		case c == '-' && i+1 < len(batch) && batch[i+1] == '-':
			if n := strings.IndexByte(batch[i:], '\n'); n >= 0 {
				i += n
			} else {
				i = len(batch) - 1
			}
		case c == '/' && i+1 < len(batch) && batch[i+1] == '*':
			if n := strings.Index(batch[i+2:], "*/"); n >= 0 {
				i += n + 3
			} else {
				i = len(batch) - 1
			}
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closing := c
			if c == '[' {
				closing = ']'
			}
			code = true
			// A doubled quote inside reads as a close and an open: the
			// same for where the statement ends.
			if n := strings.IndexByte(batch[i+1:], closing); n >= 0 {
				i += n + 1
			} else {
				i = len(batch) - 1
			}
		case c == ';':
			if !trigger || (began && depth == 0) {
				end(i + 1)
			}
		case identChar(c) && c != '$':
			j := i
			for j < len(batch) && identChar(batch[j]) {
				j++
			}
			code = true
			w := strings.ToUpper(batch[i:j])
			if len(words) < 3 {
				words = append(words, w)
				trigger = trigger || isCreateTrigger(words)
			}
			if trigger {
				switch w {
				case "BEGIN":
					depth++
					began = true
				case "CASE":
					depth++
				case "END":
					depth--
				}
			}
			i = j - 1
		case c > ' ':
			code = true
		}
	}
	end(len(batch))
	return out
}

// isCreateTrigger reports whether a statement's first words are CREATE
// TRIGGER or CREATE TEMP[ORARY] TRIGGER.
func isCreateTrigger(w []string) bool {
	if len(w) < 2 || w[0] != "CREATE" {
		return false
	}
	if w[1] == "TRIGGER" {
		return true
	}
	return len(w) == 3 && (w[1] == "TEMP" || w[1] == "TEMPORARY") && w[2] == "TRIGGER"
}
