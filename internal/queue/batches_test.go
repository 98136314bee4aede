package queue

import (
	"reflect"
	"testing"
)

func TestSplitGo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1\nGO\nSELECT 2\n", []string{"SELECT 1\n", "SELECT 2\n"}},
		{"select 1\n  go  \n\nGO\nselect 2", []string{"select 1\n", "select 2"}},
		{"SELECT 'GO'\nGOTO x", []string{"SELECT 'GO'\nGOTO x"}},
		{"GO\n\n", nil},
		{"", nil},
		{"SELECT 1\r\ngo\r\nSELECT 2\r\nGO", []string{"SELECT 1\r\n", "SELECT 2\r\n"}},
		{"\tGo\t\nSELECT 1\n", []string{"SELECT 1\n"}},
	}
	for _, c := range cases {
		if got := SplitGo(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitGo(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func BenchmarkSplitGo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		SplitGo("SELECT 1")
	}
}
