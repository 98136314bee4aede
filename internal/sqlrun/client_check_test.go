package sqlrun

import "testing"

func TestPostgresMajor(t *testing.T) {
	for v, want := range map[string]int{"15.4": 15, "14beta1": 14, "16.2 (Debian 16.2-1.pgdg120+2)": 16, "9.6.24": 9, "": 0, "devel": 0} {
		if got := postgresMajor(v); got != want {
			t.Errorf("postgresMajor(%q) = %d, want %d", v, got, want)
		}
	}
}
