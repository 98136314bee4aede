package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The version, commit and date scripts/release stamps are what `readpast
// version` prints.
func TestVersionPrintsTheStamp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "readpast")
	ldflags := "-X main.version=1.2.3 -X main.commit=0123abcd -X main.date=2026-11-27T10:00:00Z"
	out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `^readpast 1\.2\.3\ncommit 0123abcd\nbuilt 2026-11-27T10:00:00Z\ngo1\.\S+ \w+/\w+\n$`, string(out))
}
