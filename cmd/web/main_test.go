package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `readpast --help` (and `readpast help`) lists every subcommand with what it
// does, then the default command's flags; a command's --help gives its usage.
func TestHelpListsTheCommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, envOf(nil), &out, &errOut), "%v: %s", args, errOut.String())
		help := out.String()
		require.Contains(t, help, "Usage: readpast [command] [flags]")
		require.NotContains(t, help, "Usage of", "%v", args)
		for _, c := range commands() {
			require.Regexp(t, `(?m)^  `+c.name+` +\S`, help, "%v: the %s command has its line", args, c.name)
		}
		require.Contains(t, help, "-dsn", "the default command's flags follow")
	}

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"migrate", "--help"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "Usage: readpast migrate [up|status] [flags]")
	errOut.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"migrat"}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), `"migrat" is not a command`)
	require.Contains(t, errOut.String(), "  migrate ", "an unknown command lists the commands")
}

// The build the README gives works from the repository's root and makes a
// binary that runs (`go build ./cmd/web` cannot: web/ is a directory there).
func TestBuildAsTheReadmeSays(t *testing.T) {
	t.Parallel()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), "go build -o readpast ./cmd/web"), "the README says how to build")

	bin := filepath.Join(t.TempDir(), "readpast")
	build := exec.Command("go", "build", "-o", bin, "./cmd/web")
	build.Dir = root
	outb, err := build.CombinedOutput()
	require.NoError(t, err, "go build -o readpast ./cmd/web: %s", outb)
	help, err := exec.Command(bin, "--help").CombinedOutput()
	require.NoError(t, err, "%s", help)
	require.Contains(t, string(help), "Commands:")
	v, err := exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", v)
	require.Contains(t, string(v), "readpast dev")
}
