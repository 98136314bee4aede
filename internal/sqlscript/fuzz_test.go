package sqlscript

import (
	"strings"
	"testing"
)

// FuzzSplit checks what must hold for every input: Split never panics; the
// batches and separator lines are the script, byte for byte; every separator
// is a GO line; each batch's Line is where its text starts; an error names a
// line of the script.
func FuzzSplit(f *testing.F) {
	for _, seed := range []string{
		"", "SELECT 1", "SELECT 1\nGO\nSELECT 2", "a\nGO 3 -- x\r\nb", "GO\nGO\n",
		"SELECT 'it''s\nGO\n'", "/* /* */\nGO\n*/", "[a]]\nGO\nb]", "\"x\nGO\n\"",
		"PRINT 'x';\nGO\nUPDATE dbo.t SET note = N'C:\\dir\\\n' WHERE id = 12345",
		"go_live_date\ngo.tbl\nGOTO x\nGO;", "$$\nGO\n$$", "E'\\'\nGO\n'", "`a\nGO\n`",
		"a\nGO abc\n", "a\nGO 0", "-- c\nGO\n",
	} {
		f.Add(seed, uint8(0))
	}
	f.Fuzz(func(t *testing.T, script string, syn uint8) {
		syntax := Syntax(syn % 3)
		batches, err := Split(script, syntax)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Line < 1 || e.Line > strings.Count(script, "\n")+1 {
				t.Fatalf("error %v does not name a line of the script", err)
			}
			return
		}
		var whole strings.Builder
		for i, b := range batches {
			if want := strings.Count(whole.String(), "\n") + 1; b.Line != want {
				t.Fatalf("batch %d starts on line %d, its Line says %d", i, want, b.Line)
			}
			whole.WriteString(b.Text)
			if b.Separator == "" {
				if i != len(batches)-1 {
					t.Fatalf("batch %d of %d has no separator", i, len(batches))
				}
			} else if _, ok, err := goLine(b.Separator); !ok || err != nil {
				t.Fatalf("separator %q is not a GO line", b.Separator)
			}
			if b.Repeat < 1 || b.Repeat > MaxRepeat {
				t.Fatalf("repeat %d", b.Repeat)
			}
			whole.WriteString(b.Separator)
		}
		if whole.String() != script {
			t.Fatalf("the batches are not the script:\n%q\n%q", whole.String(), script)
		}
	})
}

// BenchmarkSplit is a typical body: every task runs through Split.
func BenchmarkSplit(b *testing.B) {
	body := strings.Repeat("UPDATE dbo.t SET n = n + 1 WHERE id = 42; -- one\n", 20) + "GO\n" + strings.Repeat("SELECT 'x', [y] FROM z;\n", 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Batches(body, TSQL); err != nil {
			b.Fatal(err)
		}
	}
}
