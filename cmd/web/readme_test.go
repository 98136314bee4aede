package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's build leaves ./readpast (readpast.exe on Windows) at the
// repository's root: .gitignore covers it, so it is never committed by a
// `git add .`. The README says the browser tests need Chromium and how CI
// installs it, so a contributor whose browser tests skip knows why.
func TestReadmeBuildIsIgnoredAndBrowserTestsExplained(t *testing.T) {
	t.Parallel()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout")
	}
	for _, bin := range []string{"readpast", "readpast.exe"} {
		check := exec.Command("git", "check-ignore", "-q", bin)
		check.Dir = root
		require.NoError(t, check.Run(), ".gitignore covers the binary %s that the README's build writes", bin)
	}
	check := exec.Command("git", "check-ignore", "-q", "cmd/readpast/main.go")
	check.Dir = root
	require.Error(t, check.Run(), "only the binary at the root is ignored, not a path that merely contains the name")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	for _, want := range []string{"Chromium", "apt-get install -y chromium", "READPAST_REQUIRE_BROWSER=1"} {
		require.Contains(t, string(readme), want, "the README explains the browser tests")
	}
}
